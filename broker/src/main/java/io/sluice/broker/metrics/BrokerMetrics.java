package io.sluice.broker.metrics;

import io.micrometer.core.instrument.Clock;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.sluice.broker.txn.TransactionCoordinator;
import io.sluice.broker.txn.TransactionCounts;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.config.MeterFilterReply;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.group.ChannelGroup;
import io.netty.util.concurrent.Future;
import io.sluice.broker.net.ClientSessionAdapter;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.security.LoginBackoff;
import io.sluice.broker.queue.QueueManager;
import io.sluice.broker.queue.QueueSnapshot;
import io.sluice.protocol.ErrorCode;
import io.sluice.storage.MessageStore;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

import static io.sluice.broker.metrics.MetricNames.*;

/**
 * The broker's Prometheus registry: JVM and process meters from {@link #bindJvmMeters()} (a few seconds after the
 * start, or the first scrape), the broker's own once {@link #bind} is called after recovery. The per-queue series are no Micrometer meters: one
 * {@link QueueMetricsCollector}, registered once, builds them at scrape time from each live queue's
 * {@link QueueMeters}, so a queue costs under a kilobyte of figures and histograms, not about forty
 * meters. A queue's {@link QueueMeters} are created when it is declared and dropped when it is deleted
 * (the queue manager tells; its series vanish from the next scrape), and each {@link #scrape()}
 * also adds those of new queues, drops those of deleted ones and takes every queue's figures
 * (one task on each queue's executor, waited for at most {@value #SNAPSHOT_WAIT_MS} ms in all; a
 * queue that does not answer in time keeps its previous figures). Nothing here runs on the publish
 * or delivery path. Thread-safe: scrapes are serialised.
 */
public final class BrokerMetrics implements AutoCloseable {
    static final long SNAPSHOT_WAIT_MS = 2000;

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final LongSupplier epochMillisClock;
    private final JvmGcMetrics gcMetrics = new JvmGcMetrics();
    /** Whether {@link #bindJvmMeters()} has run; guarded by this object's lock. */
    private boolean jvmMetersBound;
    /** Guarded by itself, held only to add or remove meters, never while waiting for a queue's executor. */
    private final Map<String, QueueMeters> queueMeters = new HashMap<>();
    private final QueueMetricsCollector queueCollector = new QueueMetricsCollector(this::liveQueueMeters);
    private volatile QueueManager queues;
    /** The cluster node whose follower meters follow its members, or null on a single broker. */
    private volatile io.sluice.broker.cluster.ClusterNode clusterNode;
    /** The follower meters by node id, as the members were at the last scrape; changed under this object's lock. */
    private final Map<Integer, List<Meter>> followerMeters = new HashMap<>();

    /**
     * Keeps {@code promtool check metrics} clean: Micrometer's {@code process.cpu.time} comes out as
     * {@code process_cpu_time_ns_total} (an abbreviated unit; {@code process_cpu_usage} carries the same
     * information) and is dropped, and {@code system.cpu.count} (a {@code _count} suffix on a gauge) is
     * renamed {@code system.cpu.processors}.
     */
    private static final MeterFilter PROMTOOL_CLEAN = new MeterFilter() {
        @Override
        public MeterFilterReply accept(Meter.Id id) {
            return id.getName().equals("process.cpu.time") ? MeterFilterReply.DENY : MeterFilterReply.NEUTRAL;
        }

        @Override
        public Meter.Id map(Meter.Id id) {
            return id.getName().equals("system.cpu.count") ? id.withName("system.cpu.processors") : id;
        }
    };

    public BrokerMetrics(LongSupplier epochMillisClock) {
        this.epochMillisClock = epochMillisClock;
        registry.config().meterFilter(PROMTOOL_CLEAN);
        registry.getPrometheusRegistry().register(queueCollector);
        Gauge.builder(NETTY_DIRECT_MEMORY_USED_BYTES, () -> PooledByteBufAllocator.DEFAULT.metric().usedDirectMemory())
                .description("Direct memory held by Netty's pooled allocator").register(registry);
    }

    /**
     * Adds the JVM's and the process's meters (memory, collections, threads, CPU, uptime, file descriptors), once:
     * {@link io.sluice.broker.admin.AdminServer} calls it a few seconds after the broker is listening, and every
     * {@link #scrape()} before it reads the registry. Not at construction, on the start's path: Micrometer reads them
     * through the JVM's management beans, about 45 ms of CPU in a cold JVM, which on two cores a restart's first
     * confirm waited for (docs/performance.md, "Restart after kill -9"). Collections before the call are not counted.
     */
    public synchronized void bindJvmMeters() {
        if (jvmMetersBound) {
            return;
        }
        jvmMetersBound = true;
        new JvmMemoryMetrics().bindTo(registry);
        gcMetrics.bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        new FileDescriptorMetrics().bindTo(registry);
    }

    /** The sum over the open connections of what their unsettled publishes hold (W2), at scrape time. */
    private static double publishHeldBytes(ChannelGroup connections) {
        long sum = 0;
        for (Channel ch : connections) {
            ClientSessionAdapter session = ch.pipeline().get(ClientSessionAdapter.class);
            if (session != null) { // past HELLO
                sum += session.publishHeldBytes();
            }
        }
        return sum;
    }

    /**
     * Adds the broker's meters. {@code ready} says whether the broker serves clients;
     * {@code recoveryNanos} is how long opening the store took.
     */
    public void bind(QueueManager queues, MessageStore store, ChannelGroup connections, NetworkCounters network,
                     long recoveryNanos, BooleanSupplier ready) {
        this.queues = queues;
        queues.onDeclared(this::metersOf); // before the first scrape: its latencies are recorded from the start
        queues.onDeleted(this::removeMetersOf); // not at the next scrape only: a broker nobody scrapes would keep them all
        queues.all().forEach(this::metersOf);
        Gauge.builder(BROKER_READY, () -> ready.getAsBoolean() ? 1 : 0)
                .description("1 while the broker has recovered its store and listens for clients").register(registry);
        Gauge.builder(STORAGE_RECOVERY_SECONDS, () -> recoveryNanos / 1e9)
                .description("Time taken to open and recover the store at start").register(registry);
        Gauge.builder(DISK_FREE_BYTES, store, s -> s.diskGuard().freeBytes())
                .description("Free bytes on the data directory's file system, as of the disk guard's last check")
                .strongReference(true).register(registry);
        Gauge.builder(DISK_RESERVED_BYTES, store, s -> s.config().reservedDiskBytes())
                .description("Free space below which every producer is blocked (storage.reserved-disk-bytes)")
                .strongReference(true).register(registry);
        Gauge.builder(CONNECTIONS_OPEN, connections, ChannelGroup::size).description("Open client connections")
                .strongReference(true).register(registry);
        Gauge.builder(PUBLISH_HELD_BYTES, connections, BrokerMetrics::publishHeldBytes)
                .description("Headers and payload of the messages open connections published and the broker has not confirmed or "
                        + "refused yet (docs/flow-control.md, rule W2)")
                .strongReference(true).register(registry);
        FunctionCounter.builder(FRAMES_RECEIVED, network, n -> n.framesReceived.sum()).description("Frames received").register(registry);
        FunctionCounter.builder(FRAMES_SENT, network, n -> n.framesSent.sum()).description("Frames sent").register(registry);
        FunctionCounter.builder(RECEIVED_BYTES, network, n -> n.bytesReceived.sum()).description("Bytes received").register(registry);
        FunctionCounter.builder(SENT_BYTES, network, n -> n.bytesSent.sum()).description("Bytes sent").register(registry);
        for (Map.Entry<ErrorCode, java.util.concurrent.atomic.LongAdder> e : network.protocolErrors.entrySet()) {
            FunctionCounter.builder(PROTOCOL_ERRORS, e.getValue(), java.util.concurrent.atomic.LongAdder::sum)
                    .tag(LABEL_CODE, e.getKey().name().toLowerCase())
                    .description("Connections closed by the broker, by error code").register(registry);
        }
    }

    /** Adds the counters of the limits against hostile clients, of permission denials and of refused authentications. */
    public void bindSecurity(io.sluice.broker.security.ConnectionLimits limits, io.sluice.broker.auth.Authorizer authorizer,
                             LoginBackoff loginBackoff) {
        for (LoginBackoff.Listener listener : LoginBackoff.Listener.values()) {
            FunctionCounter.builder(AUTHENTICATION_FAILURES, loginBackoff, b -> b.refusals(listener))
                    .tag(LABEL_LISTENER, listener.label())
                    .description("Authentication attempts refused (wrong credentials, or the source in backoff), by listener")
                    .register(registry);
        }
        Map<String, java.util.function.ToDoubleFunction<io.sluice.broker.security.ConnectionLimits>> refusals = Map.of(
                "max_connections", l -> l.rejectedConnections(),
                "max_connections_per_user", l -> l.rejectedUserConnections(),
                "max_queues", l -> l.rejectedQueueDeclares(),
                "max_consumers_per_connection", l -> l.rejectedSubscriptions(),
                "max_unacked_per_connection", l -> l.rejectedCredit(),
                "handshake_timeout", l -> l.handshakeTimeouts(),
                "max_frame_bytes", l -> l.oversizedFrames());
        refusals.forEach((name, read) -> FunctionCounter.builder(LIMIT_REFUSALS, limits, read)
                .tag(LABEL_LIMIT, name).description("Operations refused by a limit, by limit").register(registry));
        FunctionCounter.builder(ACCESS_DENIED, authorizer, a -> a.accessDenials())
                .description("Frames refused for a missing permission").register(registry);
    }

    /** The Prometheus text exposition, with every queue's figures taken now. */
    public synchronized String scrape() {
        bindJvmMeters();
        refreshQueues();
        refreshFollowers();
        return registry.scrape();
    }

    /**
     * The follower meters follow the shard's members (docs/replication.md, "Adding and removing a node"): a node added
     * since the last scrape gets its series, a node removed loses them.
     */
    private synchronized void refreshFollowers() {
        io.sluice.broker.cluster.ClusterNode node = clusterNode;
        if (node == null) {
            return;
        }
        java.util.Set<Integer> others = new java.util.TreeSet<>(node.nodeIds());
        others.remove(node.nodeId());
        if (others.isEmpty() && !followerMeters.isEmpty()) {
            return; // the shard is not running here (closing, or this node was removed): keep the last series seen
        }
        followerMeters.entrySet().removeIf(e -> {
            if (others.contains(e.getKey())) {
                return false;
            }
            e.getValue().forEach(registry::remove);
            return true;
        });
        for (int other : others) {
            followerMeters.computeIfAbsent(other, id -> followerMetersOf(node, id));
        }
    }

    private List<Meter> followerMetersOf(io.sluice.broker.cluster.ClusterNode node, int other) {
        String shard = node.shardName();
        return List.of(
                Gauge.builder(CLUSTER_FOLLOWER_LAG_ENTRIES, node, n -> n.follower(other)
                                .map(f -> (double) f.lagEntries()).orElse(Double.NaN))
                        .tags(LABEL_SHARD, shard, LABEL_NODE, Integer.toString(other))
                        .description("On the leader: entries of its log this follower is not known to hold (NaN on other nodes)")
                        .strongReference(true).register(registry),
                Gauge.builder(CLUSTER_FOLLOWER_LAST_RESPONSE_SECONDS, node, n -> n.follower(other)
                                .map(f -> f.lastResponseMs() / 1000.0).orElse(Double.NaN))
                        .tags(LABEL_SHARD, shard, LABEL_NODE, Integer.toString(other))
                        .description("On the leader: seconds since this follower last answered (NaN on other nodes)")
                        .strongReference(true).register(registry));
    }

    private void refreshQueues() {
        QueueManager manager = queues;
        if (manager == null) {
            return;
        }
        Map<QueueMeters, Future<QueueSnapshot>> pending = new HashMap<>();
        Map<String, BrokerQueue> live = new HashMap<>();
        for (BrokerQueue q : manager.all()) {
            live.put(q.name(), q);
        }
        synchronized (queueMeters) {
            for (Iterator<Map.Entry<String, QueueMeters>> it = queueMeters.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<String, QueueMeters> e = it.next();
                if (live.get(e.getKey()) != e.getValue().queue) {
                    e.getValue().detach();
                    it.remove();
                }
            }
        }
        for (BrokerQueue q : live.values()) {
            QueueMeters m = metersOf(q);
            try {
                pending.put(m, q.snapshot());
            } catch (RuntimeException e) {
                pending.put(m, null); // the executor is shutting down
            }
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(SNAPSHOT_WAIT_MS);
        long now = epochMillisClock.getAsLong();
        pending.forEach((meters, future) -> {
            QueueSnapshot taken = null;
            if (future != null && future.awaitUninterruptibly(QueueMeters.awaitMillis(deadline)) && future.isSuccess()) {
                taken = future.getNow();
            }
            meters.refresh(taken, now);
        });
    }

    /** The transaction coordinator's meters. */
    public void bindTransactions(TransactionCoordinator transactions) {
        Gauge.builder(TRANSACTIONS_OPEN, transactions, TransactionCoordinator::open)
                .description("Transactions open or committing").strongReference(true).register(registry);
        Gauge.builder(TRANSACTIONS_OLDEST_AGE_SECONDS, transactions, TransactionCoordinator::oldestAgeSeconds)
                .description("Age of the oldest transaction open or committing").strongReference(true).register(registry);
        Gauge.builder(TRANSACTIONS_LOG_RECORDS, transactions, TransactionCoordinator::logRecords)
                .description("Records of the transaction log still needed").strongReference(true).register(registry);
        FunctionCounter.builder(TRANSACTIONS_COMMITTED, transactions.counts(), TransactionCounts::commits)
                .description("Transactions committed").register(registry);
        FunctionCounter.builder(TRANSACTIONS_ROLLED_BACK, transactions.counts(), TransactionCounts::rollbacks)
                .description("Transactions rolled back by their client or their connection closing").register(registry);
        FunctionCounter.builder(TRANSACTIONS_ABORTED, transactions.counts(), TransactionCounts::aborts)
                .description("Transactions rolled back by the broker: timeout, refused operation, cap").register(registry);
        FunctionCounter.builder(TRANSACTIONS_TIMED_OUT, transactions.counts(), TransactionCounts::timeouts)
                .description("Transactions rolled back by their timeout").register(registry);
        FunctionCounter.builder(TRANSACTIONS_APPLY_FAILURES, transactions.counts(), TransactionCounts::applyFailures)
                .description("Attempts to store committed publishes that failed and are retried").register(registry);
    }

    /**
     * A cluster node's meters of its shard (docs/replication.md, "Operating a cluster"); each reads the node when
     * scraped. The follower meters exist for every other member of the cluster (as of the last scrape) and are NaN
     * unless this node leads.
     */
    public void bindCluster(io.sluice.broker.cluster.ClusterNode node) {
        String shard = node.shardName();
        Gauge.builder(CLUSTER_LEADER, node, n -> n.serving() ? 1 : 0).tag(LABEL_SHARD, shard)
                .description("1 while this node is the shard's leader and serves its clients").strongReference(true).register(registry);
        Gauge.builder(CLUSTER_TERM, node, n -> n.term()).tag(LABEL_SHARD, shard)
                .description("The shard's current Raft term").strongReference(true).register(registry);
        Gauge.builder(CLUSTER_LAST_LOG_INDEX, node, n -> n.lastLogIndex()).tag(LABEL_SHARD, shard)
                .description("Index of the last entry in this node's Raft log").strongReference(true).register(registry);
        Gauge.builder(CLUSTER_COMMIT_INDEX, node, n -> n.commitIndex()).tag(LABEL_SHARD, shard)
                .description("Index of the last entry this node knows committed").strongReference(true).register(registry);
        Gauge.builder(CLUSTER_APPLIED_INDEX, node, n -> n.appliedIndex()).tag(LABEL_SHARD, shard)
                .description("Index of the last entry this node applied to its queues").strongReference(true).register(registry);
        Gauge.builder(CLUSTER_APPLY_LAG_ENTRIES, node, n -> Math.max(0, n.commitIndex() - n.appliedIndex())).tag(LABEL_SHARD, shard)
                .description("Committed entries this node has not applied yet").strongReference(true).register(registry);
        io.sluice.broker.cluster.ShardCounters counters = node.counters();
        FunctionCounter.builder(CLUSTER_LEADER_CHANGES, counters, c -> c.leaderChanges()).tag(LABEL_SHARD, shard)
                .description("Leader changes this node heard of").register(registry);
        FunctionCounter.builder(CLUSTER_SUBMITTED_BYTES, counters, c -> c.submittedBytes()).tag(LABEL_SHARD, shard)
                .description("Bytes of the entries this node submitted to the shard's log as its leader").register(registry);
        FunctionCounter.builder(CLUSTER_APPLIED_BYTES, counters, c -> c.appliedBytes()).tag(LABEL_SHARD, shard)
                .description("Bytes of the committed entries this node applied: the replication traffic its store took").register(registry);
        FunctionCounter.builder(CLUSTER_APPLIED_ENTRIES, counters, c -> c.appliedEntries()).tag(LABEL_SHARD, shard)
                .description("Committed entries this node applied").register(registry);
        clusterNode = node;
        refreshFollowers(); // each scrape then follows the members
    }

    /** Removes the meters of deleted queue {@code q}, unless they already belong to a queue declared again under its name. */
    private void removeMetersOf(BrokerQueue q) {
        synchronized (queueMeters) {
            QueueMeters m = queueMeters.get(q.name());
            if (m != null && m.queue == q) {
                m.detach();
                queueMeters.remove(q.name());
            }
        }
    }

    /** The meters of the queues that exist now, for the collector. */
    private List<QueueMeters> liveQueueMeters() {
        synchronized (queueMeters) {
            return new ArrayList<>(queueMeters.values());
        }
    }

    /** Whether the registry holds a meter named {@code name} (Micrometer's dotted name). */
    boolean hasMeter(String name) {
        return registry.find(name).meter() != null;
    }

    /** How many Micrometer meters carry a queue label (tests: none, the collector exposes the queues). */
    int queueMeterCount() {
        return (int) registry.getMeters().stream().filter(m -> m.getId().getTag(MetricNames.LABEL_QUEUE) != null).count();
    }

    /**
     * How many series the exposition holds for queue {@code name} now, a histogram and its {@code _max}
     * one each
     * (tests: a deleted queue's are gone without a scrape).
     */
    int seriesCountOf(String name) {
        int count = 0;
        for (io.prometheus.metrics.model.snapshots.MetricSnapshot family : queueCollector.collect()) {
            for (io.prometheus.metrics.model.snapshots.DataPointSnapshot point : family.getDataPoints()) {
                if (name.equals(point.getLabels().get(MetricNames.LABEL_QUEUE))) {
                    count++;
                }
            }
        }
        return count;
    }

    /** The meters of this queue, registered now if need be (replacing those of a deleted queue of the same name). */
    private QueueMeters metersOf(BrokerQueue q) {
        synchronized (queueMeters) {
            QueueMeters m = queueMeters.get(q.name());
            if (m != null && m.queue == q) {
                return m;
            }
            if (m != null) {
                m.detach();
            }
            m = new QueueMeters(q, Clock.SYSTEM);
            queueMeters.put(q.name(), m);
            return m;
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            jvmMetersBound = true; // a bind still to come adds nothing to a closed registry
        }
        gcMetrics.close();
        registry.close();
    }
}
