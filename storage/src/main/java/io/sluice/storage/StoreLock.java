package io.sluice.storage;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The lock on {@code <data>/store.lock} that one open store holds, so that no other store (in this process or another)
 * opens the same data directory. Taken first in the store's open; a later step of the open that fails releases it, so
 * that a retry in the same process is not refused by its own failed attempt.
 *
 * <p>Thread ownership: taken and released by the thread that opens or closes the store.
 */
final class StoreLock {
    static final String FILE = "store.lock";

    private final Path file;
    private final FileChannel channel;
    private final FileLock lock;

    private StoreLock(Path file, FileChannel channel, FileLock lock) {
        this.file = file;
        this.channel = channel;
        this.lock = lock;
    }

    /**
     * Takes the lock of {@code dataDirectory}; on any failure nothing stays open.
     *
     * @throws StorageException if another store holds it
     * @throws UncheckedIOException if the lock file cannot be opened or locked
     */
    static StoreLock take(Path dataDirectory) {
        Path file = dataDirectory.resolve(FILE);
        FileChannel channel;
        try {
            channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open data directory " + dataDirectory + ": " + file + " cannot be opened", e);
        }
        FileLock acquired;
        try {
            acquired = tryLock(channel);
        } catch (IOException e) {
            closeQuietly(channel, e);
            throw new UncheckedIOException("cannot open data directory " + dataDirectory + ": " + file + " cannot be locked", e);
        } catch (RuntimeException | Error e) {
            closeQuietly(channel, e);
            throw e;
        }
        if (acquired == null) {
            closeQuietly(channel, null);
            throw new StorageException("data directory " + dataDirectory + " is in use by another store (store.lock is held)");
        }
        return new StoreLock(file, channel, acquired);
    }

    /** The lock, or null if another store holds it, in this process or another. */
    private static FileLock tryLock(FileChannel channel) throws IOException {
        try {
            return channel.tryLock();
        } catch (OverlappingFileLockException inThisProcess) {
            return null;
        }
    }

    /** Releases the lock and closes its descriptor; a failure of either is thrown once both were tried. */
    void release() throws IOException {
        try {
            lock.release();
        } finally {
            channel.close();
        }
    }

    /** As {@link #release()}, for an open that failed: a failure to let go is added to {@code failure}, not thrown. */
    void releaseAfterFailedOpen(Throwable failure) {
        try {
            release();
        } catch (IOException | RuntimeException e) {
            failure.addSuppressed(e);
        }
    }

    Path file() {
        return file;
    }

    private static void closeQuietly(FileChannel channel, Throwable failure) {
        try {
            channel.close();
        } catch (IOException e) {
            if (failure != null) {
                failure.addSuppressed(e);
            }
        }
    }
}
