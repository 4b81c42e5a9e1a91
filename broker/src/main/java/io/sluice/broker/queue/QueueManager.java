package io.sluice.broker.queue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.channel.EventLoopGroup;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.error.BrokerException;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueNames;
import io.sluice.storage.QueueStore;
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
import java.util.Collection;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The broker's queues: each a {@link BrokerQueue} over a {@link QueueStore}, bound to one event loop.
 * Declared settings are kept in {@code <data>/queue-settings/<name>.json} so that they survive a
 * restart. Thread-safe.
 */
public final class QueueManager {
    private static final Logger LOG = LoggerFactory.getLogger(QueueManager.class);

    private final MessageStore store;
    private final EventLoopGroup executors;
    private final BrokerConfig.Queues defaults;
    private final Path settingsDirectory;
    private final ObjectMapper json = new ObjectMapper();
    private final Map<String, BrokerQueue> queues = new ConcurrentHashMap<>();
    private final Map<String, QueueSettings> declared = new ConcurrentHashMap<>();
    private final int publishAllowance;
    /**
     * Where connections create and delete queues: a new queue's directories, files, fsyncs and
     * mappings take 10–20 ms, which on an event loop would hold up every connection and queue on that
     * loop, and a delete waits for the queue's own event loop, which from another loop could deadlock.
     * One thread, so that declares (and the max-queues check before each) and deletes are serialised.
     */
    private final ExecutorService declareThread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "sluice-queue-declare");
        t.setDaemon(true);
        return t;
    });
    /** Told of each queue declared from now on (the metrics, so no latency sample is missed). */
    private volatile Consumer<BrokerQueue> declaredListener = q -> { };
    private volatile boolean closing;
    /** Queues between their removal and the end of their store's deletion; guarded by this object's lock. */
    private final Set<String> deleting = new HashSet<>();

    public QueueManager(MessageStore store, EventLoopGroup executors, BrokerConfig.Queues defaults, int publishAllowance) {
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
            queues.put(name, newQueue(name, store.queue(name), settings));
        }
    }

    private BrokerQueue newQueue(String name, QueueStore queueStore, QueueSettings settings) {
        QueueOptions options;
        try {
            options = QueueOptions.from(name, settings, defaults);
        } catch (BrokerException e) {
            LOG.warn("Queue '{}': stored settings are no longer valid ({}); using the defaults.", name, e.getMessage());
            options = QueueOptions.defaults(name, defaults);
        }
        return new BrokerQueue(name, queueStore, executors.next(), this, options, publishAllowance);
    }

    private volatile int maxQueues = Integer.MAX_VALUE;

    /** {@code limits.max-queues}: {@link #declare} refuses a new queue past it, whoever asks (a client, the admin API, a dead-letter move). */
    public void limitQueues(int max) {
        this.maxQueues = max;
    }

    /** Sets who is told of each queue declared from now on; it must not block. */
    public void onDeclared(Consumer<BrokerQueue> listener) {
        this.declaredListener = listener;
    }

    /** The queue, or null. */
    public BrokerQueue get(String name) {
        return queues.get(name);
    }

    public Collection<BrokerQueue> all() {
        return queues.values();
    }

    /**
     * Declares a queue: creates it, or checks that the existing one has the same settings.
     *
     * @throws io.sluice.storage.InvalidQueueNameException for an invalid name
     * @throws BrokerException INVALID_QUEUE_SETTING, QUEUE_EXISTS_WITH_DIFFERENT_SETTINGS or
     *                         QUEUE_BEING_DELETED (the message names what was wrong)
     */
    public synchronized BrokerQueue declare(String name, QueueSettings settings) {
        BrokerQueue existing = existing(name, settings);
        if (existing != null) {
            return existing;
        }
        if (queues.size() >= maxQueues) {
            throw new BrokerException(ErrorCode.RESOURCE_LIMIT, "declaring queue '" + name + "' would bring the queue count to "
                    + (queues.size() + 1) + ", above limits.max-queues " + maxQueues);
        }
        if (deleting.contains(name)) {
            throw new BrokerException(ErrorCode.QUEUE_BEING_DELETED,
                    "queue '" + name + "' is being deleted; declare it again once the delete is answered");
        }
        saveSettings(name, settings);
        declared.put(name, settings);
        BrokerQueue queue = newQueue(name, store.createQueue(name), settings);
        queues.put(name, queue);
        declaredListener.accept(queue);
        LOG.info("Queue '{}' declared with settings {}.", name, settings.asMap());
        return queue;
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
        QueueOptions.from(name, settings, defaults);
        BrokerQueue q = queues.get(name);
        if (q != null) {
            QueueSettings before = declared.getOrDefault(name, QueueSettings.EMPTY);
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
        try {
            if (!declareThread.awaitTermination(5, TimeUnit.SECONDS)) {
                LOG.warn("A queue declare was still running at shutdown.");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
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
            synchronized (this) {
                store.deleteQueue(name);
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
     * Writes the settings under a temporary name, fsyncs, renames and fsyncs the directory: a queue
     * declared with settings must not come back with the defaults after a machine crash.
     */
    private void saveSettings(String name, QueueSettings settings) {
        Path file = settingsDirectory.resolve(name + ".json");
        Path tmp = settingsDirectory.resolve(name + ".json.tmp");
        try {
            ByteBuffer bytes = ByteBuffer.wrap(json.writeValueAsBytes(settings.asMap()));
            try (FileChannel channel = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                    StandardOpenOption.WRITE)) {
                while (bytes.hasRemaining()) {
                    channel.write(bytes);
                }
                channel.force(true);
            }
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            try (FileChannel directory = FileChannel.open(settingsDirectory, StandardOpenOption.READ)) {
                directory.force(true);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot save the settings of queue '" + name + "' to " + file, e);
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
