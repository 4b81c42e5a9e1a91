package io.sluice.storage;

import io.sluice.storage.ack.AckLog;
import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.files.AtomicFiles;
import io.sluice.storage.files.FileDescriptors;
import io.sluice.storage.durability.StorageFlusher;
import io.sluice.storage.readahead.ReadAhead;
import io.sluice.storage.segment.FileReleaser;
import io.sluice.storage.snapshot.SnapshotFiles;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * A data directory of named queues. Opening the store recovers every queue in it; the store owns one
 * background thread (see {@link StorageFlusher}) that forces segments and reclaims them.
 *
 * <pre>
 * &lt;data&gt;/store.lock                  held while a process has the store open
 * &lt;data&gt;/clean-shutdown              there only between a clean close and the next open ({@link CleanShutdownMark})
 * &lt;data&gt;/queues/&lt;name&gt;/segments/     Chronicle cycle files (one per segment) and metadata.cq4t
 * &lt;data&gt;/queues/&lt;name&gt;/acks/         ack checkpoint and ack journal
 * </pre>
 *
 * Thread-safe.
 */
public final class MessageStore implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MessageStore.class);
    private static final String DELETED_MARK = ".deleted-";
    /**
     * Forces of a group of new queues made at the same time ({@link NewQueues}): the threads mostly wait
     * for the disk rather than use a core; they exist only while creations run. (What the overlap saves:
     * docs/performance.md, "Declares".)
     */
    static final int CREATOR_THREADS = 32;

    private final Path dataDirectory;
    private final Path queuesDirectory;

    private final StoreConfig config;
    private final LongSupplier clock;
    private final DiskSpaceGuard diskGuard;
    private final StoreLock lock;
    private final Map<String, QueueStore> queues = new ConcurrentHashMap<>();
    /** Queues being created by {@link #createQueues}, by name; published in {@link #queues} once durable. */
    private final Map<String, CompletableFuture<QueueStore>> inCreation = new ConcurrentHashMap<>();
    private final StorageFlusher flusher;
    private final ReadAhead readAhead = new ReadAhead();
    private final FileReleaser releaser;
    private final FileForcer forcer;
    private volatile boolean closed;
    /** The last close was not clean, and the mode forces: recovery forces the segments first ({@link CleanShutdownMark}). */
    private final boolean afterUncleanStop;
    /** Every queue on disk was opened (recovered); until then a close must not mark the store closed cleanly. */
    private boolean recoveredAll;
    /**
     * Creates new queues ({@link #createQueues}): a new queue's time is mostly fsyncs, so several at once
     * let the file system commit them together. Threads exist only while creations run.
     */
    private final ThreadPoolExecutor creators;
    /** The process's open-file limit, read once at open (-1 if unknown). */
    private final long fileLimit = FileDescriptors.limit();
    private volatile boolean fileLimitWarned;

    private MessageStore(Path dataDirectory, StoreConfig config, LongSupplier clock, FileReleaser releaser, FileForcer forcer) {
        this.releaser = releaser;
        this.forcer = forcer;
        this.dataDirectory = dataDirectory;
        this.queuesDirectory = dataDirectory.resolve("queues");
        this.config = config;
        this.clock = clock;
        try {
            Files.createDirectories(queuesDirectory);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open data directory " + dataDirectory + ": " + queuesDirectory
                    + " cannot be created", e);
        }
        this.lock = StoreLock.take(dataDirectory);
        // Every step after the lock lets it go when it fails: a retry of the open in this process must find it free.
        try {
            afterUncleanStop = !CleanShutdownMark.takeAtOpen(dataDirectory) && config.durability() != DurabilityMode.NEVER;
            this.diskGuard = new DiskSpaceGuard(dataDirectory, config.reservedDiskBytes());
            this.flusher = new StorageFlusher(this::flushAll, this::reclaimAll);
            this.creators = new ThreadPoolExecutor(CREATOR_THREADS, CREATOR_THREADS, 1, TimeUnit.SECONDS,
                    new LinkedBlockingQueue<>(), r -> {
                        Thread t = new Thread(r, "sluice-storage-creator");
                        t.setDaemon(true);
                        return t;
                    });
            creators.allowCoreThreadTimeOut(true);
        } catch (IOException e) {
            UncheckedIOException refused = new UncheckedIOException("cannot open data directory " + dataDirectory + ": "
                    + CleanShutdownMark.file(dataDirectory) + " cannot be read or removed (" + e + ")", e);
            lock.releaseAfterFailedOpen(refused);
            throw refused;
        } catch (RuntimeException | Error e) {
            lock.releaseAfterFailedOpen(e);
            throw e;
        }
    }

    /** Opens (creating if needed) the store in {@code dataDirectory} and recovers every queue in it. */
    public static MessageStore open(Path dataDirectory, StoreConfig config) {
        return open(dataDirectory, config, System::currentTimeMillis);
    }

    /** As {@link #open(Path, StoreConfig)}, with the clock that stamps appended messages. */
    public static MessageStore open(Path dataDirectory, StoreConfig config, LongSupplier epochMillisClock) {
        return open(dataDirectory, config, epochMillisClock, new FileReleaser());
    }

    /**
     * As {@link #open(Path, StoreConfig)}, forcing segment files with {@code forcer}: the fault-injection
     * point for tests of the layers above (a broker whose disk fails a force). The store itself uses
     * {@link FileForcer#FSYNC}.
     */
    public static MessageStore open(Path dataDirectory, StoreConfig config, FileForcer forcer) {
        return open(dataDirectory, config, System::currentTimeMillis, new FileReleaser(), forcer);
    }

    /** As above, with the thread that deletes files; tests hold it back. */
    static MessageStore open(Path dataDirectory, StoreConfig config, LongSupplier epochMillisClock, FileReleaser releaser) {
        return open(dataDirectory, config, epochMillisClock, releaser, FileForcer.FSYNC);
    }

    /** As above, with what forces segment files to disk; tests make it fail. */
    static MessageStore open(Path dataDirectory, StoreConfig config, LongSupplier epochMillisClock, FileReleaser releaser,
                             FileForcer forcer) {
        MessageStore store;
        try {
            store = new MessageStore(dataDirectory, config, epochMillisClock, releaser, forcer);
        } catch (RuntimeException | Error e) {
            releaser.close(); // the store owns the releaser it is given, and a store's close would have closed it
            throw e;
        }
        try {
            store.recoverAll();
            store.checkFileLimit();
            store.flusher.start();
            store.readAhead.start();
        } catch (Throwable e) {
            // Throwable: a checked exception Chronicle throws undeclared must not leave store.lock held either.
            store.close();
            throw e;
        }
        return store;
    }

    private void recoverAll() {
        long started = System.nanoTime();
        List<Path> dirs = new ArrayList<>();
        try (var list = Files.list(queuesDirectory)) {
            list.filter(Files::isDirectory).forEach(dirs::add);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + queuesDirectory, e);
        }
        Collections.sort(dirs);
        int done = 0;
        for (Path dir : dirs) {
            String name = dir.getFileName().toString();
            if (name.contains(DELETED_MARK)) {
                LOG.info("Finishing the interrupted delete of queue directory {}.", dir);
                Directories.deleteRecursively(dir);
                continue;
            }
            if (!QueueNames.isValid(name)) {
                LOG.warn("Ignoring directory {}: '{}' is not a valid queue name.", dir, name);
                continue;
            }
            queues.put(name, openQueue(name, dir));
            done++;
            LOG.info("Recovery: {} of {} queues open.", done, dirs.size());
        }
        recoveredAll = true;
        LOG.info("Store {} recovered {} queues in {} ms (durability {}).", dataDirectory, queues.size(),
                (System.nanoTime() - started) / 1_000_000, config.durability().configName());
    }

    private QueueStore openQueue(String name, Path dir) {
        return opening(name, () -> QueueStore.open(name, dir, config, diskGuard, clock, flusher::wakeUp, readAhead, releaser, forcer,
                afterUncleanStop));
    }

    private QueueStore openCreated(String name, Path dir, AckLog acks) {
        return opening(name, () -> QueueStore.openCreated(name, dir, config, diskGuard, clock, flusher::wakeUp, readAhead, releaser,
                forcer, acks));
    }

    /** Runs {@code open}; running out of file descriptors is told apart from other failures. */
    private static QueueStore opening(String name, Supplier<QueueStore> open) {
        try {
            return open.get();
        } catch (RuntimeException e) {
            if (!(e instanceof StorageFilesExhaustedException) && FileDescriptors.exhausted(e)) {
                throw FileDescriptors.exhaustedError("queue '" + name + "' cannot be opened", e);
            }
            throw e;
        }
    }

    /**
     * Warns, once per store, when the queues it holds could need more file descriptors than the
     * process may open (see {@link FileDescriptors}); at start-up and as queues are created.
     */
    private void checkFileLimit() {
        if (fileLimitWarned) {
            return;
        }
        String warning = FileDescriptors.checkLimit(queues.size(), fileLimit, config.durability());
        if (warning != null) {
            fileLimitWarned = true;
            LOG.warn("{} (store {})", warning, dataDirectory);
        }
    }

    public StoreConfig config() {
        return config;
    }

    public Path dataDirectory() {
        return dataDirectory;
    }

    public DiskSpaceGuard diskGuard() {
        return diskGuard;
    }

    /**
     * Creates a queue, or returns the existing one of that name. A queue this call creates is durable
     * when it returns: its files, their directory entries and its entry in the directory of queues are
     * forced, so it survives a machine crash (see {@link #createQueues}).
     */
    public QueueStore createQueue(String name) {
        try {
            return createQueues(List.of(name)).get(0).join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException cause) {
                throw cause;
            }
            throw e;
        }
    }

    /**
     * Creates the named queues that do not exist yet, together, and returns one completed future per
     * name, in order: the queue, or why it could not be created (an invalid name, an I/O error). A name
     * given twice gets the same queue. The new queues are created in passes ({@link NewQueues}): all
     * their files are written, then forced together on the store's creation pool
     * ({@code sluice-storage-creator}), then renamed into place, then their directories are forced, the
     * directory of queues once for all. Only after that does any future complete normally: rule "a queue
     * exists once it is durable" (docs/storage.md, "Creating queues"). A queue that already existed is
     * returned as it is; one another call is creating is returned once that call has made it durable.
     */
    public List<CompletableFuture<QueueStore>> createQueues(List<String> names) {
        ensureOpen();
        Map<String, CompletableFuture<QueueStore>> results = new LinkedHashMap<>();
        Map<String, CompletableFuture<QueueStore>> claimed = new LinkedHashMap<>();
        for (String name : names) {
            if (results.containsKey(name)) {
                continue;
            }
            try {
                QueueNames.validate(name);
            } catch (RuntimeException e) {
                results.put(name, CompletableFuture.failedFuture(e));
                continue;
            }
            CompletableFuture<QueueStore> mine = new CompletableFuture<>();
            QueueStore existing = queues.get(name);
            CompletableFuture<QueueStore> other = existing != null ? null : inCreation.putIfAbsent(name, mine);
            if (existing == null && other == null) {
                existing = queues.get(name); // created and published between the first look and the claim
                if (existing != null) {
                    inCreation.remove(name, mine);
                } else {
                    claimed.put(name, mine);
                }
            }
            results.put(name, existing != null ? CompletableFuture.completedFuture(existing)
                    : other != null ? other.thenApply(q -> q) : mine);
        }
        if (!claimed.isEmpty()) {
            NewQueues group = new NewQueues(queuesDirectory, config, forcer, creators,
                    this::openCreated);
            group.create(new ArrayList<>(claimed.keySet())).forEach((name, created) -> publish(name, claimed.get(name), created));
        }
        List<CompletableFuture<QueueStore>> answers = new ArrayList<>(names.size());
        for (String name : names) {
            CompletableFuture<QueueStore> answer = results.get(name);
            answer.handle((value, failure) -> value).join(); // one another call is creating: wait for it
            answers.add(answer);
        }
        return answers;
    }

    /** Makes a new queue visible once it is durable (or gives up its name if it is not), and wakes its waiters. */
    private void publish(String name, CompletableFuture<QueueStore> mine, CompletableFuture<QueueStore> created) {
        QueueStore q = created.handle((value, failure) -> value).join();
        if (q != null) {
            queues.put(name, q);
            checkFileLimit();
        }
        inCreation.remove(name, mine);
        created.whenComplete((value, failure) -> {
            if (failure != null) {
                mine.completeExceptionally(failure);
            } else {
                mine.complete(value);
            }
        });
    }

    /** The open queue of that name. */
    public QueueStore queue(String name) {
        QueueStore q = queues.get(name);
        if (q == null) {
            throw new QueueNotFoundException(name);
        }
        return q;
    }

    public boolean hasQueue(String name) {
        return queues.containsKey(name);
    }

    /** Names of all queues, sorted. */
    public List<String> listQueues() {
        List<String> names = new ArrayList<>(queues.keySet());
        Collections.sort(names);
        return names;
    }

    /**
     * Closes and deletes a queue and all its data. The directory is renamed first, so a crash mid-delete
     * finishes at the next open; its files are then deleted by the releaser thread, because unlinking
     * them (and, on a file system mounted with {@code discard}, trimming their blocks) takes tens of
     * milliseconds per segment, and the caller is typically a broker event loop.
     */
    public void deleteQueue(String name) {
        ensureOpen();
        QueueStore q = queues.remove(name);
        if (q == null) {
            throw new QueueNotFoundException(name);
        }
        q.close();
        releaser.descriptorFreed(); // its files are closed: a queue waiting for a descriptor may have one now
        Path dir = queuesDirectory.resolve(name);
        Path doomed = queuesDirectory.resolve(name + DELETED_MARK + System.nanoTime());
        try {
            Files.move(dir, doomed, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete queue directory " + dir, e);
        }
        // Rule "a queue is gone once its delete is durable", the mirror of creation's: without this force a machine
        // crash could bring the queue back with its messages after the delete was answered, and on a cluster node
        // after the node recorded the delete as applied.
        try (FileChannel channel = FileChannel.open(queuesDirectory, StandardOpenOption.READ)) {
            forcer.forceDirectory(channel, queuesDirectory);
        } catch (IOException e) {
            // The queue is gone for this process whatever the force says (its files go below): its callers finish the
            // delete rather than report a delete that happened as failed.
            LOG.error("Queue '{}' was deleted, but the directory of queues {} could not be forced: a machine crash may bring "
                    + "it back.", name, queuesDirectory, e);
        }
        releaser.deleteTree(doomed);
    }

    /**
     * Writes a snapshot of every queue into {@code target}, which must not exist (docs/storage.md,
     * "Snapshots"): {@code <target>/queues/<name>}, each queue copied under its own lock
     * ({@link QueueStore#copyTo}: sealed segments linked, the rest copied), then every file and directory
     * of it forced. {@code target} is then a data directory that {@link #open} recovers like any other.
     * Each queue is an image of itself at its copy; a caller that needs one instant for all queues keeps
     * them from changing between the copies (the cluster's state machine applies nothing meanwhile).
     * Returns the names of the queues copied.
     */
    public List<String> snapshotTo(Path target) throws IOException {
        ensureOpen();
        Path copies = target.resolve("queues");
        Files.createDirectories(copies);
        List<String> names = listQueues();
        for (String name : names) {
            queue(name).copyTo(copies.resolve(name));
        }
        SnapshotFiles.force(target);
        return names;
    }

    /**
     * Moves a queue directory made elsewhere (a queue of a snapshot, {@link #snapshotTo}, on the same file
     * system) into this store as queue {@code name}, which must not exist, and opens it through recovery like
     * any queue at start-up. The move is one rename, made durable by forcing the directory of queues: after a
     * crash the queue is there whole or not at all.
     */
    public QueueStore installQueue(String name, Path from) {
        ensureOpen();
        QueueNames.validate(name);
        if (queues.containsKey(name) || inCreation.containsKey(name)) {
            throw new StorageException("queue '" + name + "' exists; delete it before installing another under its name");
        }
        Path dir = queuesDirectory.resolve(name);
        try {
            Files.move(from, dir, StandardCopyOption.ATOMIC_MOVE);
            AtomicFiles.fsyncDirectory(queuesDirectory);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot move " + from + " into the store as queue '" + name + "'", e);
        }
        QueueStore q = openQueue(name, dir);
        queues.put(name, q);
        checkFileLimit();
        return q;
    }

    /**
     * One queue's failure never holds back another's confirms: a queue whose flush throws is marked
     * failed (rule "a failed force is final", docs/storage.md) and the loop goes on to the next.
     */
    private boolean flushAll(long nowNanos) {
        boolean worked = false;
        for (QueueStore q : queues.values()) {
            try {
                worked |= q.flush(nowNanos);
            } catch (RuntimeException | InternalError e) {
                if (!q.isClosed()) {
                    q.failed("the flusher's work on it", e);
                }
            }
        }
        return worked;
    }

    private boolean reclaimAll() {
        boolean worked = false;
        for (QueueStore q : queues.values()) {
            try {
                worked |= q.reclaim(System.nanoTime());
            } catch (InternalError e) {
                if (!q.isClosed()) {
                    q.failed("reclaiming (a mapped access faulted)", e);
                }
            } catch (RuntimeException e) {
                // Counted and logged by the queue's reclaimer, sparingly; the periodic pass tries again.
            }
        }
        return worked;
    }

    private void ensureOpen() {
        if (closed) {
            throw new StorageException("store " + dataDirectory + " is closed");
        }
    }

    /** Stops the flusher, forces and checkpoints every queue, and releases the directory. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        creators.shutdown();
        flusher.close();
        readAhead.close();
        // An open that failed part-way closes too: the queues it never opened were never forced after an unclean stop,
        // and a mark written now would let the next open serve their unforced records as durable.
        boolean allForced = recoveredAll && config.durability() != DurabilityMode.NEVER && inCreation.isEmpty();
        for (QueueStore q : queues.values()) {
            q.close();
            allForced &= q.failure() == null;
        }
        queues.clear();
        releaser.close();
        try {
            if (allForced) {
                CleanShutdownMark.write(dataDirectory);
            }
        } catch (IOException e) {
            LOG.warn("Could not mark {} closed cleanly; the next open forces every segment.", dataDirectory, e);
        }
        try {
            lock.release();
        } catch (IOException e) {
            LOG.warn("Could not release {}.", lock.file(), e);
        }
    }

}
