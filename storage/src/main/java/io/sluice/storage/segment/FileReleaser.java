package io.sluice.storage.segment;

import io.sluice.storage.Directories;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

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
 * <p>Rule "what held a segment back asks for a pass when it lets go" (docs/storage.md): a queue whose reclaim waits
 * for a file descriptor (a relocation's force refused, rule "a source waits for its copies' forces") is told when
 * the store frees one: a channel closed here, or a queue deleted ({@link #descriptorFreed}). Descriptors the rest of
 * the process frees (sockets) are left to the periodic pass.
 *
 * <p>Thread-safe. After {@link #close()} (the store closing) the work runs on the caller.
 */
public final class FileReleaser implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FileReleaser.class);

    private final ExecutorService thread;
    /** Told once, at the next descriptor the store frees ({@link #whenDescriptorFreed}). */
    private final Queue<Runnable> descriptorWaiters = new ConcurrentLinkedQueue<>();

    public FileReleaser() {
        this(new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "sluice-storage-releaser");
            t.setDaemon(true);
            return t;
        }));
    }

    /** Runs the work on {@code executor}; tests hold it back to see what waits for it. */
    public FileReleaser(ExecutorService executor) {
        this.thread = executor;
    }

    /** Deletes {@code file} (already renamed out of Chronicle's sight) in the background. */
    public void delete(Path file) {
        run(() -> {
            try {
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
                Directories.deleteRecursively(directory);
            } catch (UncheckedIOException e) {
                LOG.warn("Could not delete {}; it will be deleted at the next start.", directory, e);
            }
        });
    }

    /** Closes {@code channel} in the background: if its file was unlinked, this close frees it. */
    public void close(Closeable channel) {
        run(() -> {
            try {
                channel.close();
            } catch (IOException e) {
                LOG.warn("Could not close a segment file channel.", e);
            }
            descriptorFreed(); // also when close() threw: the descriptor is released all the same
        });
    }

    /** Runs {@code waiter} once, when the store next frees a file descriptor; any thread. It must not block. */
    public void whenDescriptorFreed(Runnable waiter) {
        descriptorWaiters.add(waiter);
    }

    /** The store freed a file descriptor: tells each waiter, once. Any thread. */
    public void descriptorFreed() {
        for (Runnable waiter; (waiter = descriptorWaiters.poll()) != null; ) {
            waiter.run();
        }
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
