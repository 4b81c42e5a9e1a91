package io.sluice.storage;

import io.sluice.storage.ack.AckFiles;
import io.sluice.storage.ack.AckLog;
import io.sluice.storage.ack.NewAckFiles;
import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.files.AtomicFiles;
import io.sluice.storage.files.FileDescriptors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.Function;

/**
 * Creates a group of new queues in passes, so that the group's forces wait together instead of each
 * queue's forces carrying the others' fresh writes (docs/storage.md, "Creating queues"). Rule "write
 * everything, then force everything":
 * <ol>
 *   <li>write: each queue's directories, its ack checkpoint and journal and its {@link QueueIncarnation} under
 *       temporary names ({@link NewAckFiles#prepare}), nothing forced;</li>
 *   <li>force every temporary file;</li>
 *   <li>install: rename them into place and open the queue (its Chronicle Queue opens, and writes its
 *       metadata file, only at its first append: rule "Chronicle opens at first use");</li>
 *   <li>force every new directory entry: each queue's {@code acks}, {@code segments} and own directory,
 *       and the directory of queues.</li>
 * </ol>
 * An ack file reaches its real name only after it was forced, and a queue is handed back only after
 * the last pass, so a crash at any point leaves each queue absent, or present with complete ack files
 * (an empty queue's), and every queue handed back durable. Chronicle's metadata file is not forced
 * here: a queue without segments keeps nothing in it, and recovery makes it again if a crash left it
 * incomplete ({@link io.sluice.storage.recovery.QueueRecovery}); the first segment's force forces it
 * with the segment. Each pass runs its steps on the creation pool, one
 * task per file or directory, and ends when all are done; a queue whose step fails is left out of the
 * later passes, and its open files are closed. Thread-safe: a call keeps its state to itself (the
 * store makes one instance per group).
 */
record NewQueues(Path queuesDirectory, StoreConfig config, FileForcer forcer, Executor pool, Opener opener) {
    private static final Logger LOG = LoggerFactory.getLogger(NewQueues.class);

    /** Opens a new queue over the ack log its creation installed, or (null) over the ack files it found. */
    @FunctionalInterface
    interface Opener {
        QueueStore open(String name, Path directory, AckLog createdAcks);
    }

    /** One queue of the group, as the passes leave it. */
    private static final class Pending {
        final String name;
        final Path directory;
        NewAckFiles prepared;
        /** Its incarnation file, under its temporary name until installed. */
        Path incarnation;
        QueueStore queue;
        /** The first failure of any of its steps; set from the pool's threads. */
        volatile Throwable failure;

        Pending(String name, Path directory) {
            this.name = name;
            this.directory = directory;
        }

        synchronized void failed(Throwable t) {
            if (failure == null) {
                failure = t;
            }
        }

        boolean ok() {
            return failure == null;
        }
    }

    /** A step of a pass for one queue. */
    @FunctionalInterface
    private interface Step {
        void run() throws IOException;
    }

    /**
     * Creates the queues {@code names} (distinct, valid, none existing, claimed by the caller) and returns,
     * per name in order, a completed future: the durable queue, or why it could not be created.
     */
    Map<String, CompletableFuture<QueueStore>> create(List<String> names) {
        List<Pending> group = new ArrayList<>(names.size());
        for (String name : names) {
            group.add(new Pending(name, queuesDirectory.resolve(name)));
        }
        long started = System.nanoTime();
        pass(group, q -> List.of(() -> prepare(q)));
        long written = System.nanoTime();
        pass(group, q -> forcesOf(temporaryFiles(q), false));
        long filesForced = System.nanoTime();
        pass(group, q -> List.of(() -> install(q)));
        long installed = System.nanoTime();
        List<Pending> forcingParent = new ArrayList<>(group);
        Pending parent = new Pending("", queuesDirectory);
        forcingParent.add(parent);
        pass(forcingParent, q -> q == parent ? forcesOf(List.of(queuesDirectory), true) : forcesOf(q.queue.createdDirectories(), true));
        if (LOG.isDebugEnabled()) {
            long done = System.nanoTime();
            LOG.debug("Created {} queues in {} us: writing {} us, forcing files {} us, opening {} us, forcing directories {} us.",
                    group.size(), (done - started) / 1_000, (written - started) / 1_000, (filesForced - written) / 1_000,
                    (installed - filesForced) / 1_000, (done - installed) / 1_000);
        }
        Map<String, CompletableFuture<QueueStore>> created = new LinkedHashMap<>();
        for (Pending q : group) {
            Throwable failure = q.failure != null ? q.failure : parent.failure;
            if (failure == null) {
                created.put(q.name, CompletableFuture.completedFuture(q.queue));
                continue;
            }
            discard(q, failure);
            boolean parentFailed = q.failure == null && !(failure instanceof StorageFilesExhaustedException);
            created.put(q.name, CompletableFuture.failedFuture(parentFailed
                    ? new UncheckedIOException("cannot force the directory of queues " + queuesDirectory + " after creating queue '"
                    + q.name + "'", asIo(failure))
                    : failure));
        }
        return created;
    }

    /**
     * Writes the queue's ack files, unless its directory already holds them: a creation of this name
     * that failed after installing them (say, at the directory forces) left them, and the queue is then
     * opened over them as any queue on disk is.
     */
    private void prepare(Pending q) throws IOException {
        Path acks = q.directory.resolve("acks");
        if (!Files.exists(acks.resolve(AckFiles.CHECKPOINT))) {
            q.prepared = NewAckFiles.prepare(acks, config.ackJournalBytes());
        }
        Files.createDirectories(q.directory);
        q.incarnation = QueueIncarnation.writeTemporary(q.directory); // a new id even over what a failed creation left
    }

    private static List<Path> temporaryFiles(Pending q) {
        List<Path> files = new ArrayList<>(3);
        files.add(q.incarnation);
        if (q.prepared != null) {
            files.addAll(q.prepared.temporaryFiles());
        }
        return files;
    }

    private void install(Pending q) throws IOException {
        AtomicFiles.install(q.incarnation, q.directory.resolve(QueueIncarnation.FILE)); // its entry forced with the directory's
        AckLog acks = q.prepared == null ? null : q.prepared.install();
        try {
            q.queue = opener.open(q.name, q.directory, acks);
        } catch (RuntimeException | Error e) {
            if (acks != null) {
                acks.close(); // a no-op if the failed open closed it
            }
            throw e;
        }
    }

    /** Closes what a failed queue had open (its directory stays, as a crash would leave it; opening it finds an empty queue). */
    private static void discard(Pending q, Throwable failure) {
        try {
            if (q.queue != null) {
                q.queue.close();
            } else if (q.prepared != null) {
                q.prepared.discard();
            }
        } catch (IOException | RuntimeException e) {
            failure.addSuppressed(e);
        }
    }

    private List<Step> forcesOf(List<Path> paths, boolean directories) {
        List<Step> steps = new ArrayList<>(paths.size());
        for (Path path : paths) {
            steps.add(() -> force(path, directories));
        }
        return steps;
    }

    private void force(Path path, boolean directory) throws IOException {
        FileChannel channel;
        try {
            channel = FileChannel.open(path, directory ? StandardOpenOption.READ : StandardOpenOption.WRITE);
        } catch (IOException e) {
            if (FileDescriptors.exhausted(e)) {
                throw FileDescriptors.exhaustedError("cannot open " + path + " to force it", e);
            }
            throw e;
        }
        try (channel) {
            if (directory) {
                forcer.forceDirectory(channel, path);
            } else {
                forcer.force(channel, path);
            }
        }
    }

    /**
     * Runs every step of every queue still without failure, on the pool (on this thread if there is only
     * one), and returns when all have ended; a step's failure is its queue's.
     */
    private void pass(List<Pending> group, Function<Pending, List<Step>> stepsOf) {
        List<CompletableFuture<Void>> running = new ArrayList<>();
        List<Runnable> tasks = new ArrayList<>();
        for (Pending q : group) {
            if (!q.ok()) {
                continue;
            }
            for (Step step : stepsOf.apply(q)) {
                tasks.add(() -> {
                    try {
                        step.run();
                    } catch (IOException e) {
                        q.failed(new UncheckedIOException("cannot create queue '" + q.name + "': " + e.getMessage(), e));
                    } catch (RuntimeException | Error e) {
                        q.failed(e);
                    }
                });
            }
        }
        if (tasks.size() == 1) {
            tasks.get(0).run();
            return;
        }
        for (Runnable task : tasks) {
            running.add(CompletableFuture.runAsync(task, pool));
        }
        for (CompletableFuture<Void> f : running) {
            f.join();
        }
    }

    private static IOException asIo(Throwable t) {
        return t instanceof UncheckedIOException u ? u.getCause() : t instanceof IOException io ? io : new IOException(t);
    }
}
