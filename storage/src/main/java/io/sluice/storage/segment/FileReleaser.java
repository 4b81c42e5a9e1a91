package io.sluice.storage.segment;

import io.sluice.storage.Directories;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The store's thread that gives disk space back, {@code sluice-storage-releaser}: it unlinks reclaimed
 * segment files and deleted queues' directories, and closes file channels whose file may already be
 * unlinked.
 *
 * <p>Why a thread of its own: the kernel frees a file's page cache and blocks when the last reference
 * to an unlinked file goes, and for a 64 MiB segment that took 18–22 ms here (measured on the flusher,
 * once per roll under W1). On the flusher it held up every force, and so every confirm, for that long;
 * here it costs the same CPU but nobody waits for it. A file is renamed to {@code .cq4.deleting}
 * before it is handed over, so a crash before the unlink is finished at the next open.
 *
 * <p><b>Deleting in steps.</b> On a file system mounted with online {@code discard}, freeing a file's
 * blocks sends the disk a discard of all of them, synchronously, and the disk serves the other
 * writers' I/O behind it: the segment forces that confirms wait for were 8–26 ms slow for up to
 * 300 ms after each 64 MiB unlink (docs/performance.md). So a file larger than {@code deleteChunkBytes}
 * is first cut from its end in steps of that size, with a pause of {@value #PAUSE_MILLIS} ms after
 * each, and then unlinked: many small discards with room between them, not one large one. RocksDB
 * deletes its large files in chunks for the same reason ({@code bytes_max_delete_chunk}). A file is
 * cut only if this process does not map it ({@link MappedFiles}); otherwise it is unlinked in one go,
 * which is always safe. Once a file is renamed, nothing can map it anew: Chronicle finds its files
 * by name.
 *
 * <p>Thread-safe. After {@link #close()} (the store closing) the work runs on the caller.
 */
public final class FileReleaser implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FileReleaser.class);

    static final long PAUSE_MILLIS = 2;

    /** What the thread does after each step of cutting a file; the default sleeps, tests record. */
    @FunctionalInterface
    public interface StepPause {
        void afterStep(Path file, long bytesLeft) throws InterruptedException;
    }

    private static final StepPause SLEEP = (file, bytesLeft) -> Thread.sleep(PAUSE_MILLIS);

    private final ExecutorService thread;
    private final long deleteChunkBytes;
    private final StepPause pause;

    /** Deletes files larger than {@code deleteChunkBytes} in steps (see class javadoc); 0 unlinks them in one go. */
    public FileReleaser(long deleteChunkBytes) {
        this(new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "sluice-storage-releaser");
            t.setDaemon(true);
            return t;
        }), deleteChunkBytes, SLEEP);
    }

    /** Runs the work on {@code executor} and unlinks files in one go; tests hold it back to see what waits for it. */
    public FileReleaser(ExecutorService executor) {
        this(executor, 0, SLEEP);
    }

    /** Runs the work on {@code executor}, calling {@code pause} after each step of a delete. */
    public FileReleaser(ExecutorService executor, long deleteChunkBytes, StepPause pause) {
        if (deleteChunkBytes < 0) {
            throw new IllegalArgumentException("deleteChunkBytes " + deleteChunkBytes + " is negative");
        }
        this.thread = executor;
        this.deleteChunkBytes = deleteChunkBytes;
        this.pause = pause;
    }

    /** Deletes {@code file} (already renamed out of Chronicle's sight) in the background. */
    public void delete(Path file) {
        run(() -> {
            try {
                cutInSteps(file);
                Files.deleteIfExists(file);
            } catch (IOException e) {
                LOG.warn("Could not delete {}; it will be deleted at the next start.", file, e);
            }
        });
    }

    /** Deletes {@code directory} and everything in it (a deleted queue's, already renamed) in the background. */
    public void deleteTree(Path directory) {
        run(() -> {
            try {
                if (deleteChunkBytes > 0) {
                    List<Path> files;
                    try (Stream<Path> walk = Files.walk(directory)) {
                        files = walk.filter(Files::isRegularFile).toList();
                    }
                    for (Path file : files) {
                        cutInSteps(file);
                    }
                }
                Directories.deleteRecursively(directory);
            } catch (IOException | UncheckedIOException e) {
                LOG.warn("Could not delete {}; it will be deleted at the next start.", directory, e);
            }
        });
    }

    /** Cuts {@code file} from its end down to at most one chunk, if it is larger and not mapped here. */
    private void cutInSteps(Path file) throws IOException {
        if (deleteChunkBytes == 0 || MappedFiles.mayBeMapped(file)) {
            return;
        }
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            for (long size = channel.size() - deleteChunkBytes; size > 0; size -= deleteChunkBytes) {
                channel.truncate(size);
                pause.afterStep(file, size);
            }
        } catch (NoSuchFileException gone) {
            // deleted by someone else meanwhile: nothing left to cut
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // unlinked in one go by the caller
        }
    }

    /** Closes {@code channel} in the background: if its file was unlinked, this close frees it. */
    public void close(Closeable channel) {
        run(() -> {
            try {
                channel.close();
            } catch (IOException e) {
                LOG.warn("Could not close a segment file channel.", e);
            }
        });
    }

    private void run(Runnable work) {
        try {
            thread.execute(work);
        } catch (RejectedExecutionException closing) {
            work.run();
        }
    }

    /** Finishes the work handed over so far (at most 10 s), then stops the thread. */
    @Override
    public void close() {
        thread.shutdown();
        try {
            if (!thread.awaitTermination(10, TimeUnit.SECONDS)) {
                LOG.warn("Releasing files took over 10 s; the rest is finished at the next start.");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
