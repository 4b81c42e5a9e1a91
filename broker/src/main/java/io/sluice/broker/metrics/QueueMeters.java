package io.sluice.broker.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueSnapshot;
import io.sluice.protocol.FlowState;
import io.sluice.storage.BacklogStats;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoredMessage;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

import static io.sluice.broker.metrics.MetricNames.*;

/**
 * The meters of one queue. Every value is read from figures taken once per scrape by
 * {@link #refresh(QueueSnapshot, long)} (a snapshot from the queue's executor, the store's backlog
 * statistics and the oldest unacknowledged message), never on the publish or delivery path.
 * Touched only by the scraping thread, under {@link BrokerMetrics}' lock.
 */
final class QueueMeters {
    private static final QueueSnapshot.Counters NO_COUNTS = new QueueSnapshot.Counters(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);

    final BrokerQueue queue;
    private final List<Meter> meters = new ArrayList<>();
    private volatile QueueSnapshot snapshot;
    private volatile BacklogStats stats;
    private volatile double oldestUnackedAgeSeconds;
    private volatile double oldestReadyAgeSeconds;

    /** Publish-to-confirm buckets: 0.25 ms (a batched fsync) to 10 s (a stalled disk or a slowed queue). */
    private static final Duration[] CONFIRM_BUCKETS = millis(0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500,
            1_000, 2_500, 5_000, 10_000);
    /** Publish-to-ack buckets: the store clock counts milliseconds; backlogs make minutes plausible. */
    private static final Duration[] ACK_BUCKETS = millis(1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500,
            5_000, 10_000, 30_000, 60_000, 300_000);

    QueueMeters(BrokerQueue queue, MeterRegistry registry) {
        this.queue = queue;
        QueueStore store = queue.store();
        this.stats = store.stats();
        Tags tags = Tags.of(LABEL_QUEUE, queue.name());
        meters.add(Gauge.builder(QUEUE_INFO, () -> 1)
                .tags(tags.and(LABEL_DURABILITY, store.durability().configName(),
                        LABEL_OVERFLOW_POLICY, queue.options().quota().overflow().name().toLowerCase().replace('_', '-')))
                .description("Constant 1; the labels carry the queue's durability mode and overflow policy")
                .strongReference(true).register(registry));
        gauge(registry, tags, QUEUE_BACKLOG_MESSAGES, "Messages stored and not yet acknowledged", s -> s.backlogMessages());
        gauge(registry, tags, QUEUE_BACKLOG_BYTES, "Headers plus payload bytes of the backlog", s -> s.backlogBytes());
        gauge(registry, tags, QUEUE_READY_MESSAGES, "Backlog messages not out with a consumer", QueueSnapshot::readyMessages);
        gauge(registry, tags, QUEUE_UNACKED_MESSAGES, "Messages delivered and not yet acknowledged", s -> s.inFlightMessages());
        gauge(registry, tags, QUEUE_CONSUMERS, "Subscriptions", s -> s.consumers().size());
        gauge(registry, tags, QUEUE_PRODUCERS, "Open connections that published to the queue", s -> s.producers().size());
        gauge(registry, tags, QUEUE_PRODUCERS_BLOCKED, "Producers told to stop (flow state blocked)",
                s -> s.flowState() == FlowState.BLOCKED ? s.producers().size() : 0);
        gauge(registry, tags, QUEUE_FLOW_STATE, "What producers were last told: 0 free, 1 slowed, 2 blocked", s -> s.flowState().code());
        statsGauge(registry, tags, QUEUE_PINNED_BYTES, "Segment bytes kept on disk by the oldest unacknowledged message", BacklogStats::pinnedBytes);
        statsGauge(registry, tags, QUEUE_SEGMENTS, "Segments on disk", BacklogStats::segments);
        meters.add(Gauge.builder(QUEUE_STORAGE_FAILED, store, s -> s.failure() == null ? 0 : 1).tags(tags)
                .description("1 once the queue's storage failed (a force to disk did not succeed); it refuses publishes until a restart")
                .strongReference(true).register(registry));
        statsGauge(registry, tags, QUEUE_DISK_BYTES, "Record bytes in the segments on disk", BacklogStats::diskBytes);
        meters.add(Gauge.builder(QUEUE_OLDEST_UNACKED_AGE_SECONDS, this, m -> m.oldestUnackedAgeSeconds).tags(tags)
                .description("Age of the oldest unacknowledged message (0 when there is none)")
                .strongReference(true).register(registry));

        counter(registry, tags, QUEUE_PUBLISHED, "Messages stored (dead-letter copies included; resends recognised are not)",
                c -> c.published());
        counter(registry, tags, QUEUE_CONFIRMED,
                "Stored messages confirmed to producers (resends confirmed without storing count as duplicates)", c -> c.confirmed());
        counter(registry, tags, QUEUE_PUBLISH_REFUSED, "Publishes refused by the quota or the disk guard", c -> c.publishRefused());
        counter(registry, tags, QUEUE_DELIVERED, "Deliveries to consumers, redeliveries included", c -> c.delivered());
        counter(registry, tags, QUEUE_REDELIVERED, "Messages taken back for redelivery", c -> c.redelivered());
        counter(registry, tags, QUEUE_ACKED, "Messages acknowledged by consumers", c -> c.acked());
        counter(registry, tags, QUEUE_NACKED, "Messages negatively acknowledged by consumers", c -> c.nacked());
        counter(registry, tags, QUEUE_DEAD_LETTERED, "Messages moved to the dead-letter queue", c -> c.deadLettered());
        counter(registry, tags, QUEUE_DEAD_LETTER_FAILURES,
                "Moves to the dead-letter queue that failed; the message stayed and was delivered again", c -> c.deadLetterFailures());
        counter(registry, tags, QUEUE_DROPPED, "Messages discarded by the drop-oldest policy", c -> c.dropped());
        counter(registry, tags, QUEUE_DUPLICATES,
                "Resent publishes whose (producer id, sequence) was already stored, confirmed again without being stored "
                        + "(counted when confirmed, and neither as published nor as confirmed)", c -> c.duplicates());
        gauge(registry, tags, QUEUE_PRODUCERS_TRACKED, "Producers in the queue's producer table (idempotent publishing)",
                s -> s.trackedProducers());
        counter(registry, tags, QUEUE_PRODUCERS_EVICTED,
                "Producers forgotten because the table was full (their later resends are stored again)", c -> c.producersEvicted());
        counter(registry, tags, QUEUE_PRODUCERS_EXPIRED,
                "Producers forgotten after the idle expiry (their later resends are stored again)", c -> c.producersExpired());
        statsCounter(registry, tags, QUEUE_RECLAIMED_SEGMENTS, "Segments deleted since the store opened", BacklogStats::reclaimedSegments);
        statsCounter(registry, tags, QUEUE_RECLAIMED_BYTES, "Record bytes of the deleted segments", BacklogStats::reclaimedBytes);
        statsCounter(registry, tags, QUEUE_RELOCATED, "Stragglers moved forward so old segments could go", BacklogStats::relocatedMessages);
        meters.add(FunctionCounter.builder(QUEUE_SYNCS, store, QueueStore::syncCount).tags(tags)
                .description("Forces (fsyncs) of the queue's segments").register(registry));
        meters.add(FunctionCounter.builder(QUEUE_SYNC_SECONDS, store, s -> s.syncNanos() / 1e9).tags(tags)
                .description("Time spent in those forces").register(registry));
        meters.add(FunctionCounter.builder(QUEUE_CORRUPT_RECORDS, store, QueueStore::corruptRecords).tags(tags)
                .description("Records found damaged and skipped").register(registry));

        meters.add(Gauge.builder(QUEUE_OLDEST_READY_AGE_SECONDS, this, m -> m.oldestReadyAgeSeconds).tags(tags)
                .description("Age of the oldest message stored and not out with a consumer (0 when there is none)")
                .strongReference(true).register(registry));
        gauge(registry, tags.and(LABEL_REASON, REASON_NO_CREDIT), QUEUE_CONSUMERS_STALLED,
                "Consumers that get nothing, by reason: no credit left, or their connection is not writable",
                s -> s.consumers().stream().filter(c -> c.credit() <= 0).count());
        gauge(registry, tags.and(LABEL_REASON, REASON_NOT_WRITABLE), QUEUE_CONSUMERS_STALLED,
                "Consumers that get nothing, by reason: no credit left, or their connection is not writable",
                s -> s.consumers().stream().filter(c -> !c.writable()).count());
        meters.add(FunctionCounter.builder(QUEUE_BLOCKED_SECONDS, this, m -> {
            QueueSnapshot s = m.snapshot;
            return s == null ? 0 : s.blockedNanos() / 1e9;
        }).tags(tags).description("Time the flow state was blocked (producers told to stop)").register(registry));

        Timer confirm = Timer.builder(QUEUE_PUBLISH_CONFIRM_SECONDS).tags(tags)
                .description("From a PUBLISH frame's arrival to the release of its CONFIRM, one sample per frame")
                .serviceLevelObjectives(CONFIRM_BUCKETS).register(registry);
        Timer ack = Timer.builder(QUEUE_PUBLISH_ACK_SECONDS).tags(tags)
                .description("From the append of the oldest message in an ACK frame to that frame, one sample per frame")
                .serviceLevelObjectives(ACK_BUCKETS).register(registry);
        meters.add(confirm);
        meters.add(ack);
        queue.recordLatencies(nanos -> confirm.record(nanos, TimeUnit.NANOSECONDS),
                millis -> ack.record(millis, TimeUnit.MILLISECONDS));
    }

    /** Takes in the figures of one scrape. {@code nowMillis} is the clock's epoch time. */
    void refresh(QueueSnapshot taken, long nowMillis) {
        if (taken != null) {
            snapshot = taken;
        }
        QueueStore store = queue.store();
        stats = store.stats();
        double age = 0;
        try {
            long oldest = store.oldestUnacked(id -> false, 0);
            StoredMessage m = oldest < 0 ? null : store.read(oldest);
            age = m == null ? 0 : Math.max(0, nowMillis - m.timestampMillis()) / 1000.0;
        } catch (RuntimeException e) {
            age = Double.NaN; // a damaged record or a queue being deleted: unknown, not 0
        }
        oldestUnackedAgeSeconds = age;
        QueueSnapshot s = snapshot;
        if (s != null) {
            long ready = s.oldestReadyTimestampMillis();
            oldestReadyAgeSeconds = ready < 0 ? 0 : Math.max(0, nowMillis - ready) / 1000.0;
        }
    }

    void remove(MeterRegistry registry) {
        queue.recordLatencies(nanos -> { }, millis -> { });
        meters.forEach(registry::remove);
        meters.clear();
    }

    private double fromSnapshot(ToDoubleFunction<QueueSnapshot> f) {
        QueueSnapshot s = snapshot;
        return s == null ? Double.NaN : f.applyAsDouble(s);
    }

    private void gauge(MeterRegistry registry, Tags tags, String name, String help, ToDoubleFunction<QueueSnapshot> f) {
        meters.add(Gauge.builder(name, this, m -> m.fromSnapshot(f)).tags(tags).description(help)
                .strongReference(true).register(registry));
    }

    private void statsGauge(MeterRegistry registry, Tags tags, String name, String help, ToDoubleFunction<BacklogStats> f) {
        meters.add(Gauge.builder(name, this, m -> f.applyAsDouble(m.stats)).tags(tags).description(help)
                .strongReference(true).register(registry));
    }

    private void counter(MeterRegistry registry, Tags tags, String name, String help, ToDoubleFunction<QueueSnapshot.Counters> f) {
        meters.add(FunctionCounter.builder(name, this, m -> {
            QueueSnapshot s = m.snapshot;
            return f.applyAsDouble(s == null ? NO_COUNTS : s.counters());
        }).tags(tags).description(help).register(registry));
    }

    private void statsCounter(MeterRegistry registry, Tags tags, String name, String help, ToDoubleFunction<BacklogStats> f) {
        meters.add(FunctionCounter.builder(name, this, m -> f.applyAsDouble(m.stats)).tags(tags).description(help)
                .register(registry));
    }

    private static Duration[] millis(double... values) {
        Duration[] out = new Duration[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = Duration.ofNanos((long) (values[i] * 1_000_000));
        }
        return out;
    }

    static long awaitMillis(long deadlineNanos) {
        return Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()));
    }
}
