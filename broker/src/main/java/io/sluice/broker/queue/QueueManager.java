package io.sluice.broker.queue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.EventExecutor;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.error.BrokerException;
import io.sluice.broker.log.RateLimitedLog;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueNames;
import io.sluice.storage.QueueStore;
import io.sluice.storage.dedup.ProducerTable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The broker's queues: each a {@link BrokerQueue} over a {@link QueueStore}, bound to one event loop.
 * Declared settings are kept in {@code <data>/queue-settings/<name>.json} (none for a queue declared
 * without settings) so that they survive a restart. Declares of new queues are taken in groups by the
 * declare thread ({@link #declareGrouped}); a queue is visible ({@link #get}) only once it is durable.
 * Thread-safe.
 */
public final class QueueManager {
    private static final Logger LOG = LoggerFactory.getLogger(QueueManager.class);
    /**
     * Most declares one group takes: bounds how long a group holds this object's lock (a dead-letter
     * queue declared from an event loop waits for it), while 256 declares already share few fsync waits.
     */
    static final int MAX_GROUP = 256;
    private static final int SETTINGS_WRITER_THREADS = 32;

    private final MessageStore store;
    private final EventLoopGroup executors;
    private final BrokerConfig.Queues defaults;
    private final Path settingsDirectory;
    private final ObjectMapper json = new ObjectMapper();
    private final Map<String, BrokerQueue> queues = new ConcurrentHashMap<>();
    private final Map<String, QueueSettings> declared = new ConcurrentHashMap<>();
    private final int publishAllowance;
    private final long publishAllowanceBytes;
    private final Role role;
    /** Set by the broker's disk guard ({@link #diskBlocked}), read by every queue's executor. */
    private volatile String diskBlockedReason;
    /** Null on a single broker; set once, before any connection, on a cluster node (docs/replication.md). */
    private volatile Replication replication;
    /** On a cluster node, whether it still applies the replicated log (rule R2: it stops rather than skip an entry). */
    private final ApplyHalt applyHalt = new ApplyHalt();
    /**
     * Where connections create and delete queues: a new queue's directories, files, fsyncs and
     * mappings take 10–20 ms, which on an event loop would hold up every connection and queue on that
     * loop, and a delete waits for the queue's own event loop, which from another loop could deadlock.
     * One thread, so that groups of declares (and the max-queues check of each) and deletes are
     * serialised; a group's files are written and forced by the pools below, not by this thread.
     */
    private final ExecutorService declareThread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "sluice-queue-declare");
        t.setDaemon(true);
        return t;
    });
    /** Declares handed to {@link #declareGrouped} that no group has taken yet. */
    private final ConcurrentLinkedQueue<DeclareRequest> waitingDeclares = new ConcurrentLinkedQueue<>();
    /**
     * Writes the settings files of a group in parallel, so that their fsyncs share file-system journal
     * commits; threads exist only while a group is written.
     */
    private final ThreadPoolExecutor settingsWriters;
    /** Told of each queue declared from now on (the metrics, so no latency sample is missed). */
    private volatile Consumer<BrokerQueue> declaredListener = q -> { };
    private volatile Consumer<BrokerQueue> deletedListener = q -> { };
    private volatile Consumer<BrokerQueue> beforeFilesDeleted = q -> { };
    private volatile boolean closing;
    /** Queues between their removal and the end of their store's deletion; guarded by this object's lock. */
    private final Set<String> deleting = new HashSet<>();

    /**
     * The operator log's lines about single messages (taken back after an ack timeout, dead-lettered, failing to be),
     * which a consumer can make as often as it likes: rate-limited (RateLimitedLog rule L1) across every queue; the
     * queues' metrics count each one. The broker flushes it every second.
     */
    private final RateLimitedLog messageLog = RateLimitedLog.standard("single messages (ack timeouts, dead-letters)");
    /**
     * The lines about producer checkpoints that could not be written (ProducerRegistry), which a failing disk makes for
     * every queue and every retry: rate-limited across every queue; {@code sluice_queue_producer_checkpoint_failures_total}
     * counts each one. The broker flushes it every second.
     */
    private final RateLimitedLog producerStateLog = RateLimitedLog.standard("producer checkpoints");
    /**
     * The lines about connections whose reading paused for their publish window or their publishes' held bytes (rule
     * H2), which a client can make as often as it crosses the window: rate-limited across every connection (the
     * connections' {@code publishHeldBytes} and the window's metrics show each one). The broker flushes it every second.
     */
    private final RateLimitedLog publishPauseLog = RateLimitedLog.standard("publish-window pauses");

    /** Writes the queues' producer checkpoints (ProducerRegistry), off their event loops. */
    private final java.util.concurrent.ExecutorService producerStateWriter = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "sluice-producer-state");
        t.setDaemon(true);
        return t;
    });

    /** What the queues serve: a broker of its own, or a cluster node, whose producer tables forget only what a marker covers. */
    public enum Role {
        SINGLE_BROKER,
        /** Rule R4 of docs/replication.md: the producer tables hold each producer until a marker covers it ({@link #appliedEntriesMarked}). */
        CLUSTER_NODE
    }

    /** {@code broker.publish-window-bytes} of the embedded defaults, for a manager made without it. */
    public static final long DEFAULT_PUBLISH_ALLOWANCE_BYTES = 64L << 20;

    /** A single broker's queues, with the embedded defaults' publish window in bytes. */
    public QueueManager(MessageStore store, EventLoopGroup executors, BrokerConfig.Queues defaults, int publishAllowance) {
        this(store, executors, defaults, publishAllowance, DEFAULT_PUBLISH_ALLOWANCE_BYTES, Role.SINGLE_BROKER);
    }

    /**
     * @param publishAllowance      {@code broker.publish-window-messages}: how far past a hard quota in messages a
     *                              blocked queue still stores what was in flight (A2 of {@link Backlog#refusal})
     * @param publishAllowanceBytes {@code broker.publish-window-bytes}: the same past a hard quota in bytes
     */
    public QueueManager(MessageStore store, EventLoopGroup executors, BrokerConfig.Queues defaults, int publishAllowance,
                        long publishAllowanceBytes, Role role) {
        this.role = role;
        this.publishAllowanceBytes = publishAllowanceBytes;
        this.settingsWriters = new ThreadPoolExecutor(SETTINGS_WRITER_THREADS, SETTINGS_WRITER_THREADS, 1, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), r -> {
                    Thread t = new Thread(r, "sluice-settings-writer");
                    t.setDaemon(true);
                    return t;
                });
        settingsWriters.allowCoreThreadTimeOut(true);
        this.publishAllowance = publishAllowance;
        this.store = store;
        this.executors = executors;
        this.defaults = defaults;
        this.settingsDirectory = store.dataDirectory().resolve("queue-settings");
        try {
            Files.createDirectories(settingsDirectory);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + settingsDirectory, e);
        }
        for (String name : store.listQueues()) {
            QueueSettings settings = loadSettings(name);
            declared.put(name, settings);
            serve(name, newQueue(name, store.queue(name), settings));
        }
    }

    /**
     * Makes {@code queue} the one served under {@code name}, blocked at once if the disk guard blocks: a queue declared
     * while it does, left FREE, would have its producers send into a store that refuses their appends.
     * The guard's change and this each read the other's write after their own (the map's, then the volatile reason),
     * so a queue declared while the guard changes is told by one of them, or both (idempotent).
     */
    private void serve(String name, BrokerQueue queue) {
        queues.put(name, queue);
        if (diskBlockedReason != null) {
            queue.diskGuardChanged();
        }
    }

    /**
     * The broker-wide disk guard: below the reserved free space (a reason) every producer of every queue, those
     * declared later included, is blocked; with null they resume.
     */
    public void diskBlocked(String reason) {
        diskBlockedReason = reason;
        for (BrokerQueue queue : queues.values()) {
            queue.diskGuardChanged();
        }
    }

    /** Why the disk guard blocks every producer, or null. */
    String diskBlockedReason() {
        return diskBlockedReason;
    }

    private BrokerQueue newQueue(String name, QueueStore queueStore, QueueSettings settings) {
        QueueOptions options;
        try {
            options = QueueOptions.fromStored(name, settings, defaults);
        } catch (BrokerException e) {
            LOG.warn("Queue '{}': stored settings are no longer valid ({}); using the defaults.", name, e.getMessage());
            options = QueueOptions.defaults(name, defaults);
        }
        return new BrokerQueue(name, queueStore, executors.next(), this, options, publishAllowance);
    }

    /**
     * The producer state of a queue being opened, replayed from its checkpoint and records. With
     * deduplication off it tracks no producer. The window covers
     * what one connection may have unconfirmed.
     */
    ProducerRegistry openProducers(String name, QueueStore queueStore, EventExecutor queueExecutor) {
        ProducerTable table = new ProducerTable(defaults.dedupMaxProducers, defaults.dedupIdleExpiryMs,
                Math.max(1, publishAllowance));
        if (role == Role.CLUSTER_NODE) {
            table.holdUntilMarked();
        }
        return ProducerRegistry.open(name, queueStore, table, queueExecutor, producerStateWriter,
                (task, delayMillis) -> queueExecutor.schedule(task, delayMillis, TimeUnit.MILLISECONDS), defaults.dedupEnabled,
                producerStateLog);
    }

    private volatile int maxQueues = Integer.MAX_VALUE;

    /**
     * {@code limits.max-queues}: {@link #declare} refuses a new queue past it, whoever asks (a client, the admin API, a
     * dead-letter move). A cluster node applies committed declares with {@link #declareCommitted}, past it.
     */
    public void limitQueues(int max) {
        this.maxQueues = max;
    }

    /** Sets who is told of each queue declared from now on; it must not block. */
    public void onDeclared(Consumer<BrokerQueue> listener) {
        this.declaredListener = listener;
    }

    /** Sets who is told of each queue deleted from now on, once it is closed and its files are gone; it must not block. */
    public void onDeleted(Consumer<BrokerQueue> listener) {
        this.deletedListener = listener;
    }

    /**
     * Sets what runs on the declare thread for each queue being deleted, once it is closed and before its
     * files are deleted (the transactions' commit records it keeps, rule T5 of QueueTransactions); it may
     * block briefly, and holds up declares and deletes meanwhile.
     */
    public void beforeFilesDeleted(Consumer<BrokerQueue> listener) {
        this.beforeFilesDeleted = listener;
    }

    /** {@code broker.publish-window-bytes}: how far past a hard quota in bytes a blocked queue still stores (A2). */
    long publishAllowanceBytes() {
        return publishAllowanceBytes;
    }

    /**
     * Makes this broker a cluster node: from now on declares, publishes and acks go through
     * {@code replication}. Set once at start-up, before the listener binds.
     */
    public void replication(Replication replication) {
        this.replication = replication;
    }

    /**
     * Rule R4 of docs/replication.md, on a cluster node: a marker now names every entry applied so far, and the stores
     * are durable through them, so a restart will not replay them: each queue's producer table may forget the producers
     * it saw until now. Completes once every queue took it in (on its own thread, after the work queued there before).
     */
    public CompletableFuture<Void> appliedEntriesMarked() {
        List<CompletableFuture<Void>> taken = new ArrayList<>();
        for (BrokerQueue queue : queues.values()) {
            taken.add(queue.producersMarked());
        }
        return CompletableFuture.allOf(taken.toArray(CompletableFuture[]::new));
    }

    /** The cluster's replication, or null on a single broker. */
    public Replication replication() {
        return replication;
    }

    /** On a cluster node, whether it still applies the replicated log ({@link ApplyHalt}). */
    public ApplyHalt applyHalt() {
        return applyHalt;
    }

    /** The queue, or null. */
    public BrokerQueue get(String name) {
        return queues.get(name);
    }

    public Collection<BrokerQueue> all() {
        return queues.values();
    }

    /**
     * Declares a queue: creates it, or checks that the existing one has the same settings. A queue
     * this creates is durable when this returns (see {@link #declareGrouped}); it runs on the caller's
     * thread, as a group of one.
     *
     * @throws io.sluice.storage.InvalidQueueNameException for an invalid name
     * @throws BrokerException INVALID_QUEUE_SETTING, QUEUE_EXISTS_WITH_DIFFERENT_SETTINGS or
     *                         QUEUE_BEING_DELETED (the message names what was wrong)
     */
    public BrokerQueue declare(String name, QueueSettings settings) {
        return declare(name, settings, maxQueues);
    }

    /**
     * Declares as {@link #declare(String, QueueSettings)} does, without {@code limits.max-queues}: a cluster node applying
     * a committed declare (rule R2 of docs/replication.md). The leader checked the limit before it submitted the entry
     * (the cluster's LeaderQueueLimit); a node checking its own catalog here would decide differently on a replay, whose
     * catalog already reflects later deletes.
     */
    public BrokerQueue declareCommitted(String name, QueueSettings settings) {
        return declare(name, settings, Integer.MAX_VALUE);
    }

    /**
     * The refusal of a declare past {@code limits.max-queues}: RESOURCE_LIMIT, naming the queue, the count it would bring
     * and the limit; the same words on a single broker and from a cluster's leader.
     */
    public static BrokerException tooManyQueues(String name, int count, int maxQueues) {
        return new BrokerException(ErrorCode.RESOURCE_LIMIT, "declaring queue '" + name + "' would bring the queue count to "
                + count + ", above limits.max-queues " + maxQueues);
    }

    /** A declare as a group of one on the caller's thread, refused (RESOURCE_LIMIT) past {@code maxQueues} queues. */
    private BrokerQueue declare(String name, QueueSettings settings, int maxQueues) {
        DeclareRequest request = new DeclareRequest(name, settings, maxQueues);
        declareGroup(List.of(request));
        try {
            return request.answer.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException cause) {
                throw cause;
            }
            throw e;
        }
    }

    /**
     * Declares a queue on the declare thread, together with every other declare waiting there
     * (docs/protocol.md, "Queue management"): the thread takes up to
     * {@link #MAX_GROUP} waiting declares, checks each (name, settings, {@code maxQueues}), writes and
     * fsyncs the settings of the new queues and then, if a file was written or deleted, the settings
     * directory once, creates their stores together ({@link MessageStore#createQueues}), and only then
     * completes their futures. So a future
     * completes normally only once its queue would survive a machine crash, and the group's settings
     * and stores are written with their fsync waits overlapping (what that saves: docs/performance.md,
     * "Declares").
     *
     * <p>{@code maxQueues} is exact within a group: each new queue counts those before it in the group,
     * so two declares never both take the last free place.
     *
     * @return completes with the queue; or fails with {@link io.sluice.storage.InvalidQueueNameException},
     *         a {@link BrokerException} (INVALID_QUEUE_SETTING, QUEUE_EXISTS_WITH_DIFFERENT_SETTINGS,
     *         QUEUE_BEING_DELETED, RESOURCE_LIMIT over {@code maxQueues}), {@link java.util.concurrent.CancellationException}
     *         (the broker is closing) or another exception (an I/O failure)
     */
    public CompletableFuture<BrokerQueue> declareGrouped(String name, QueueSettings settings, int maxQueues) {
        DeclareRequest request = new DeclareRequest(name, settings, maxQueues);
        waitingDeclares.add(request);
        try {
            onDeclareThread(this::declareWaiting).whenComplete((ignored, failure) -> {
                if (failure != null) {
                    request.answer.completeExceptionally(failure); // a no-op if an earlier group answered it
                }
            });
        } catch (RejectedExecutionException e) {
            request.answer.completeExceptionally(new CancellationException("the broker is shutting down"));
        }
        return request.answer;
    }

    /** On the declare thread: one group of the declares waiting, if any are left. */
    private Void declareWaiting() {
        List<DeclareRequest> group = new ArrayList<>();
        for (DeclareRequest r = waitingDeclares.poll(); r != null; r = group.size() < MAX_GROUP ? waitingDeclares.poll() : null) {
            group.add(r);
        }
        if (!group.isEmpty()) {
            declareGroup(group);
        }
        return null;
    }

    /** Declares {@code group} (see {@link #declareGrouped}) and completes every request's future before it returns. */
    private void declareGroup(List<DeclareRequest> group) {
        synchronized (this) {
            Map<String, DeclareRequest> creating = new LinkedHashMap<>();
            for (DeclareRequest r : group) {
                try {
                    r.existing = existing(r.name, r.settings);
                    if (r.existing != null) {
                        continue;
                    }
                    if (deleting.contains(r.name)) {
                        throw new BrokerException(ErrorCode.QUEUE_BEING_DELETED,
                                "queue '" + r.name + "' is being deleted; declare it again once the delete is answered");
                    }
                    DeclareRequest first = creating.get(r.name);
                    if (first != null) {
                        if (r.settings.size() > 0 && !first.settings.equals(r.settings)) {
                            throw new BrokerException(ErrorCode.QUEUE_EXISTS_WITH_DIFFERENT_SETTINGS,
                                    "queue '" + r.name + "' exists with settings " + first.settings.asMap()
                                    + ", not " + r.settings.asMap());
                        }
                        r.sameAs = first;
                        continue;
                    }
                    int count = queues.size() + creating.size() + 1;
                    if (count > r.maxQueues) {
                        throw tooManyQueues(r.name, count, r.maxQueues);
                    }
                    creating.put(r.name, r);
                } catch (RuntimeException e) {
                    r.failure = e;
                }
            }
            if (!creating.isEmpty()) {
                create(new ArrayList<>(creating.values()));
            }
        }
        for (DeclareRequest r : group) {
            DeclareRequest source = r.sameAs != null ? r.sameAs : r;
            if (r.failure != null || source.failure != null) {
                r.answer.completeExceptionally(r.failure != null ? r.failure : source.failure);
            } else {
                r.answer.complete(r.existing != null ? r.existing : source.created);
            }
        }
    }

    /**
     * Creates the queues of one group, under this object's lock: their settings first (each file
     * fsynced under a temporary name and renamed, then the settings directory fsynced once if any file
     * was renamed into place or deleted), then their
     * stores. Settings before stores: a queue whose store survives a crash has its settings too, so a
     * client repeating an unanswered declare finds the settings it asked for, not the defaults.
     */
    private void create(List<DeclareRequest> requests) {
        long started = System.nanoTime();
        List<DeclareRequest> saved = new ArrayList<>();
        List<CompletableFuture<Boolean>> writes = new ArrayList<>();
        boolean anySettings = requests.stream().anyMatch(r -> r.settings.size() > 0);
        for (DeclareRequest r : requests) {
            Supplier<Boolean> write = () -> writeSettings(r.name, r.settings);
            writes.add(CompletableFuture.supplyAsync(write, requests.size() == 1 || !anySettings ? Runnable::run : settingsWriters));
        }
        boolean directoryChanged = false;
        for (int i = 0; i < requests.size(); i++) {
            try {
                directoryChanged |= writes.get(i).join();
                saved.add(requests.get(i));
            } catch (CompletionException e) {
                requests.get(i).failure = e.getCause();
            }
        }
        if (saved.isEmpty()) {
            return;
        }
        try {
            if (directoryChanged) {
                forceSettingsDirectory();
            }
        } catch (UncheckedIOException e) {
            saved.forEach(r -> r.failure = e);
            return;
        }
        long settingsWritten = System.nanoTime();
        List<CompletableFuture<QueueStore>> stores = store.createQueues(saved.stream().map(r -> r.name).toList());
        long storesCreated = System.nanoTime();
        for (int i = 0; i < saved.size(); i++) {
            DeclareRequest r = saved.get(i);
            try {
                QueueStore queueStore = stores.get(i).join();
                declared.put(r.name, r.settings);
                BrokerQueue queue = newQueue(r.name, queueStore, r.settings);
                serve(r.name, queue);
                r.created = queue;
                declaredListener.accept(queue);
                LOG.info("Queue '{}' declared with settings {}.", r.name, r.settings.asMap());
            } catch (CompletionException e) {
                r.failure = e.getCause();
            } catch (RuntimeException e) {
                r.failure = e;
            }
        }
        if (LOG.isDebugEnabled()) {
            LOG.debug("Declared a group of {} new queues in {} us: settings {} us, stores {} us, queues {} us.", saved.size(),
                    (System.nanoTime() - started) / 1_000, (settingsWritten - started) / 1_000, (storesCreated - settingsWritten) / 1_000,
                    (System.nanoTime() - storesCreated) / 1_000);
        }
    }

    /** One declare of a group; the fields after {@code answer} are the declare thread's, under this object's lock. */
    private static final class DeclareRequest {
        final String name;
        final QueueSettings settings;
        final int maxQueues;
        final CompletableFuture<BrokerQueue> answer = new CompletableFuture<>();
        BrokerQueue existing;
        BrokerQueue created;
        /** An earlier declare of the same name in the group, whose outcome this one shares. */
        DeclareRequest sameAs;
        Throwable failure;

        DeclareRequest(String name, QueueSettings settings, int maxQueues) {
            this.name = name;
            this.settings = settings;
            this.maxQueues = maxQueues;
        }
    }

    /**
     * The dead-letter queue of that name; created with default settings on first use, on the declare
     * thread and within {@link #limitQueues the queue limit}, as a DECLARE would create it.
     */
    CompletableFuture<BrokerQueue> deadLetterQueue(String name) {
        BrokerQueue q = queues.get(name);
        if (q != null) {
            return CompletableFuture.completedFuture(q);
        }
        return onDeclareThread(() -> declare(name, QueueSettings.EMPTY));
    }

    /**
     * Runs {@code task} (typically one that ends in {@link #declare} or {@link #delete}) on the
     * declare thread. Once the broker is closing, a task not yet started fails instead of running.
     */
    public <T> CompletableFuture<T> onDeclareThread(Supplier<T> task) {
        return CompletableFuture.supplyAsync(() -> {
            if (closing) {
                throw new CancellationException("the broker is shutting down");
            }
            return task.get();
        }, declareThread);
    }

    /**
     * The queue if it exists and {@code settings} are empty or those it was declared with; null if it
     * does not exist. Takes no lock and touches no file, so an event loop may call it while the declare
     * thread creates another queue.
     *
     * @throws io.sluice.storage.InvalidQueueNameException for an invalid name
     * @throws BrokerException INVALID_QUEUE_SETTING or QUEUE_EXISTS_WITH_DIFFERENT_SETTINGS
     */
    public BrokerQueue existing(String name, QueueSettings settings) {
        QueueNames.validate(name);
        BrokerQueue q = queues.get(name);
        QueueSettings before = q == null ? null : declared.getOrDefault(name, QueueSettings.EMPTY);
        if (before == null || !settings.equals(before)) {
            // A declare of an existing queue with the settings it was stored with is not checked again: a bound added
            // since (ackTimeoutMs's) would refuse what that queue has always been declared with.
            QueueOptions.from(name, settings, defaults);
        }
        if (q != null) {
            if (settings.size() > 0 && !before.equals(settings)) {
                throw new BrokerException(ErrorCode.QUEUE_EXISTS_WITH_DIFFERENT_SETTINGS, "queue '" + name + "' exists with settings " + before.asMap()
                        + ", not " + settings.asMap());
            }
        }
        return q;
    }

    /** Lets a declare in progress finish (at most 5 s), drops those not started, then stops the declare thread. */
    public void close() {
        closing = true;
        declareThread.shutdown();
        settingsWriters.shutdown();
        producerStateWriter.shutdown();
        try {
            // The last checkpoints (Broker.close) are written before the store closes, not dropped.
            if (!producerStateWriter.awaitTermination(5, TimeUnit.SECONDS)) {
                LOG.warn("A producer checkpoint was still being written at shutdown.");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            if (!declareThread.awaitTermination(5, TimeUnit.SECONDS)) {
                LOG.warn("A queue declare was still running at shutdown.");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Where the queues log what happens to single messages; thread-safe. */
    public RateLimitedLog messageLog() {
        return messageLog;
    }

    /** The operator log's lines about producer checkpoints that failed, rate-limited across every queue. */
    public RateLimitedLog producerStateLog() {
        return producerStateLog;
    }

    /** The operator log's lines about connections paused for their publish window, rate-limited across every connection. */
    public RateLimitedLog publishPauseLog() {
        return publishPauseLog;
    }

    /** The store every queue is in (a cluster node's snapshots copy it). */
    public MessageStore store() {
        return store;
    }

    /** Where each declared queue's settings are kept, as {@code <name>.json}. */
    public Path settingsDirectory() {
        return settingsDirectory;
    }

    /**
     * Installs a queue made elsewhere (a cluster snapshot's, docs/replication.md rule R4), which must not
     * exist here: its settings file, if any, moved into place and forced first (settings before stores, as a
     * declare), then its directory moved into the store and opened through recovery. On the declare thread.
     */
    public BrokerQueue adopt(String name, Path queueDirectory, Path settingsFile) {
        try {
            if (Files.exists(settingsFile)) {
                Files.move(settingsFile, settingsDirectory.resolve(name + ".json"), StandardCopyOption.ATOMIC_MOVE,
                        StandardCopyOption.REPLACE_EXISTING);
                forceSettingsDirectory();
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot install the settings of queue '" + name + "' from " + settingsFile, e);
        }
        synchronized (this) {
            QueueStore queueStore = store.installQueue(name, queueDirectory);
            QueueSettings settings = loadSettings(name);
            declared.put(name, settings);
            BrokerQueue queue = newQueue(name, queueStore, settings);
            serve(name, queue);
            declaredListener.accept(queue);
            LOG.info("Queue '{}' installed from a snapshot with settings {}.", name, settings.asMap());
            return queue;
        }
    }

    /** Deletes a queue and its messages. Returns false if there was none. */
    public boolean delete(String name) {
        BrokerQueue q;
        synchronized (this) {
            q = queues.remove(name);
            if (q == null) {
                return false;
            }
            declared.remove(name);
            deleting.add(name);
        }
        try {
            // Not under this object's lock: the queue's event loop may be waiting for it (a dead-letter
            // queue created there), and this waits for that loop.
            closeQueue(name, q);
            beforeFilesDeleted.accept(q);
            synchronized (this) {
                store.deleteQueue(name);
                q.transactions().filesDeleted(); // only now may a commit record naming its messages be finished (T6)
                try {
                    Files.deleteIfExists(settingsDirectory.resolve(name + ".json"));
                } catch (IOException e) {
                    LOG.warn("Could not delete the settings of queue '{}'.", name, e);
                }
            }
        } finally {
            synchronized (this) {
                deleting.remove(name);
            }
        }
        LOG.info("Queue '{}' deleted.", name);
        deletedListener.accept(q);
        return true;
    }

    private static void closeQueue(String name, BrokerQueue q) {
        try {
            if (q.executor().inEventLoop()) {
                // A connection on the queue's own event loop: waiting for a task queued behind this
                // one would never end (Netty refuses it), and the store would be deleted under a queue
                // that is still open.
                q.close();
            } else {
                q.executor().submit(q::close).syncUninterruptibly();
            }
        } catch (RuntimeException e) {
            LOG.warn("Queue '{}': error while closing for delete.", name, e);
        }
    }

    /**
     * Writes the settings under a temporary name, fsyncs and renames it; the caller then fsyncs the
     * directory ({@link #forceSettingsDirectory}): a queue declared with settings must not come back
     * with the defaults after a machine crash. No settings, no file ({@link #loadSettings} reads a
     * missing file as none): one fsync less per declare. A file left by a queue of that name whose
     * delete a crash interrupted is deleted instead, so that it cannot lend its settings to this one.
     * Returns whether the settings directory changed (a file renamed into place or deleted): only then
     * must the caller force it, so a group of declares without settings forces no settings file or
     * directory at all.
     */
    private boolean writeSettings(String name, QueueSettings settings) {
        Path file = settingsDirectory.resolve(name + ".json");
        Path tmp = settingsDirectory.resolve(name + ".json.tmp");
        try {
            if (settings.size() == 0) {
                return Files.deleteIfExists(file);
            }
            ByteBuffer bytes = ByteBuffer.wrap(json.writeValueAsBytes(settings.asMap()));
            try (FileChannel channel = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                    StandardOpenOption.WRITE)) {
                while (bytes.hasRemaining()) {
                    channel.write(bytes);
                }
                channel.force(true);
            }
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            return true;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot save the settings of queue '" + name + "' to " + file, e);
        }
    }

    /** Makes the settings files renamed into place so far durable under their names. */
    private void forceSettingsDirectory() {
        try (FileChannel directory = FileChannel.open(settingsDirectory, StandardOpenOption.READ)) {
            directory.force(true);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot force the settings directory " + settingsDirectory, e);
        }
    }

    @SuppressWarnings("unchecked")
    private QueueSettings loadSettings(String name) {
        Path file = settingsDirectory.resolve(name + ".json");
        if (!Files.exists(file)) {
            return QueueSettings.EMPTY;
        }
        try {
            Map<String, Object> map = json.readValue(file.toFile(), Map.class);
            QueueSettings.Builder b = QueueSettings.builder();
            map.forEach((k, v) -> {
                if (v instanceof Number n) {
                    b.set(k, n.longValue());
                } else if (v instanceof Boolean bool) {
                    b.set(k, bool);
                } else {
                    b.set(k, String.valueOf(v));
                }
            });
            return b.build();
        } catch (IOException e) {
            LOG.warn("Queue '{}': settings file {} is unreadable ({}); using the defaults.", name, file, e.getMessage());
            return QueueSettings.EMPTY;
        }
    }
}
