package io.sluice.broker.metrics;

import io.micrometer.core.instrument.Clock;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueSnapshot;
import io.sluice.storage.BacklogStats;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoredMessage;

import java.util.concurrent.TimeUnit;

/**
 * What the scrape exposes of one queue: the figures taken once per scrape by
 * {@link #refresh(QueueSnapshot, long)} (a snapshot from the queue's executor, the store's backlog
 * statistics and the oldest unacknowledged message), never on the publish or delivery path, and the
 * queue's two latency histograms. No Micrometer meter is registered per queue:
 * {@link QueueMetricsCollector} turns these figures into the exposition at scrape time, so a queue
 * costs this object and its two {@link LatencyHistogram}s (well under a kilobyte) instead of about forty
 * meters.
 *
 * <p>Threads: constructed on the thread that declares the queue; {@link #refresh} and every getter run
 * on the scraping thread, under {@link BrokerMetrics}' scrape lock (the fields are volatile because the
 * constructing thread is another); the histograms are written on the queue's executor.
 */
final class QueueMeters {
    static final QueueSnapshot.Counters NO_COUNTS = new QueueSnapshot.Counters(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);

    /** Publish-to-confirm buckets: 0.25 ms (a batched fsync) to 10 s (a stalled disk or a slowed queue). */
    private static final long[] CONFIRM_BOUNDS_NANOS = LatencyHistogram.boundsMillis(0.25, 0.5, 1, 2.5, 5, 10, 25, 50,
            100, 250, 500, 1_000, 2_500, 5_000, 10_000);
    /** Publish-to-ack buckets: the store clock counts milliseconds; backlogs make minutes plausible. */
    private static final long[] ACK_BOUNDS_NANOS = LatencyHistogram.boundsMillis(1, 2.5, 5, 10, 25, 50, 100, 250, 500,
            1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000);

    final BrokerQueue queue;
    /** Wall-clock time the queue's series began (Prometheus' created timestamp of its counters). */
    final long createdMillis;
    final LatencyHistogram publishConfirm;
    final LatencyHistogram publishAck;
    private volatile QueueSnapshot snapshot;
    private volatile BacklogStats stats;
    private volatile double oldestUnackedAgeSeconds;
    private volatile double oldestReadyAgeSeconds;

    /** Starts recording the queue's latencies: from here on its executor writes the histograms. */
    QueueMeters(BrokerQueue queue, Clock clock) {
        this.queue = queue;
        this.createdMillis = clock.wallTime();
        this.stats = queue.store().stats();
        this.publishConfirm = new LatencyHistogram(CONFIRM_BOUNDS_NANOS, clock);
        this.publishAck = new LatencyHistogram(ACK_BOUNDS_NANOS, clock);
        queue.recordLatencies(publishConfirm::recordNanos,
                millis -> publishAck.recordNanos(TimeUnit.MILLISECONDS.toNanos(millis)));
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

    /** Stops the queue's executor from recording into these histograms (the queue was deleted or replaced). */
    void detach() {
        queue.recordLatencies(nanos -> { }, millis -> { });
    }

    /** The last snapshot taken, or null before the first scrape that got one. */
    QueueSnapshot snapshot() {
        return snapshot;
    }

    /** The message counters of the last snapshot, zeros before the first. */
    QueueSnapshot.Counters counters() {
        QueueSnapshot s = snapshot;
        return s == null ? NO_COUNTS : s.counters();
    }

    BacklogStats stats() {
        return stats;
    }

    double oldestUnackedAgeSeconds() {
        return oldestUnackedAgeSeconds;
    }

    double oldestReadyAgeSeconds() {
        return oldestReadyAgeSeconds;
    }

    static long awaitMillis(long deadlineNanos) {
        return Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()));
    }
}
