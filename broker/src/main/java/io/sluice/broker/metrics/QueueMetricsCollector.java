package io.sluice.broker.metrics;

import io.micrometer.core.instrument.Meter;
import io.micrometer.prometheusmetrics.PrometheusNamingConvention;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Exemplars;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot.HistogramDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricMetadata;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.sluice.broker.queue.QueueSnapshot;
import io.sluice.protocol.FlowState;
import io.sluice.storage.BacklogStats;
import io.sluice.storage.QueueStore;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

import static io.sluice.broker.metrics.MetricNames.*;

/**
 * Every per-queue series of the exposition, built at scrape time from the live queues' {@link QueueMeters}:
 * registered once with the Prometheus registry instead of about forty Micrometer meters per queue. The
 * names, labels, types, help texts and values are those the Micrometer meters exposed (the names go
 * through Micrometer's own {@link PrometheusNamingConvention}; the timers' histograms keep their buckets,
 * {@code _sum}, {@code _count} and {@code _max}); a queue no longer in the map has no series from the
 * next scrape on.
 *
 * <p>Threads: {@link #collect()} runs on the scraping thread, inside {@link BrokerMetrics#scrape()}'s
 * lock; it reads the queues' figures as the last refresh left them, the store's counters as they are.
 */
final class QueueMetricsCollector implements MultiCollector {
    private static final PrometheusNamingConvention NAMING = new PrometheusNamingConvention();

    /** One gauge or counter series per queue, labelled with the queue's name only. */
    private record QueueSeries(String name, boolean counter, String help, ToDoubleFunction<QueueMeters> value) {
    }

    /** One latency histogram per queue (a Micrometer timer with service level objectives before). */
    private record QueueHistogram(String name, String help, Function<QueueMeters, LatencyHistogram> histogram) {
    }

    private static final List<QueueSeries> SERIES = List.of(
            snapshotGauge(QUEUE_BACKLOG_MESSAGES, "Messages stored and not yet acknowledged", s -> s.backlogMessages()),
            snapshotGauge(QUEUE_BACKLOG_BYTES, "Headers plus payload bytes of the backlog", s -> s.backlogBytes()),
            snapshotGauge(QUEUE_READY_MESSAGES, "Backlog messages not out with a consumer", QueueSnapshot::readyMessages),
            snapshotGauge(QUEUE_UNACKED_MESSAGES, "Messages delivered and not yet acknowledged", s -> s.inFlightMessages()),
            snapshotGauge(QUEUE_CONSUMERS, "Subscriptions", s -> s.consumers().size()),
            snapshotGauge(QUEUE_PRODUCERS, "Open connections that published to the queue", s -> s.producers().size()),
            snapshotGauge(QUEUE_PRODUCERS_BLOCKED, "Producers told to stop (flow state blocked)",
                    s -> s.flowState() == FlowState.BLOCKED ? s.producers().size() : 0),
            snapshotGauge(QUEUE_FLOW_STATE, "What producers were last told: 0 free, 1 slowed, 2 blocked", s -> s.flowState().code()),
            statsGauge(QUEUE_PINNED_BYTES, "Segment bytes kept on disk by the oldest unacknowledged message", BacklogStats::pinnedBytes),
            statsGauge(QUEUE_SEGMENTS, "Segments on disk", BacklogStats::segments),
            new QueueSeries(QUEUE_STORAGE_FAILED, false,
                    "1 once the queue's storage failed (a force to disk did not succeed); it refuses publishes until a restart",
                    m -> m.queue.store().failure() == null ? 0 : 1),
            statsGauge(QUEUE_DISK_BYTES, "Record bytes in the segments on disk", BacklogStats::diskBytes),
            new QueueSeries(QUEUE_OLDEST_UNACKED_AGE_SECONDS, false, "Age of the oldest unacknowledged message (0 when there is none)",
                    QueueMeters::oldestUnackedAgeSeconds),
            new QueueSeries(QUEUE_OLDEST_READY_AGE_SECONDS, false,
                    "Age of the oldest message stored and not out with a consumer (0 when there is none)",
                    QueueMeters::oldestReadyAgeSeconds),
            snapshotGauge(QUEUE_PRODUCERS_TRACKED, "Producers in the queue's producer table (idempotent publishing)",
                    s -> s.trackedProducers()),

            counter(QUEUE_PUBLISHED, "Messages stored (dead-letter copies included; resends recognised are not)", c -> c.published()),
            counter(QUEUE_CONFIRMED, "Stored messages confirmed to producers (resends confirmed without storing count as duplicates)",
                    c -> c.confirmed()),
            counter(QUEUE_PUBLISH_REFUSED, "Publishes refused by the quota or the disk guard", c -> c.publishRefused()),
            counter(QUEUE_DELIVERED, "Deliveries to consumers, redeliveries included", c -> c.delivered()),
            counter(QUEUE_REDELIVERED, "Messages taken back for redelivery", c -> c.redelivered()),
            counter(QUEUE_ACKED, "Messages acknowledged by consumers", c -> c.acked()),
            counter(QUEUE_NACKED, "Messages negatively acknowledged by consumers", c -> c.nacked()),
            counter(QUEUE_DEAD_LETTERED, "Messages moved to the dead-letter queue", c -> c.deadLettered()),
            counter(QUEUE_DEAD_LETTER_FAILURES,
                    "Moves to the dead-letter queue that failed; the message stayed and was delivered again", c -> c.deadLetterFailures()),
            counter(QUEUE_DROPPED, "Messages discarded by the drop-oldest policy", c -> c.dropped()),
            counter(QUEUE_DUPLICATES,
                    "Resent publishes whose (producer id, sequence) was already stored, confirmed again without being stored "
                            + "(counted when confirmed, and neither as published nor as confirmed)", c -> c.duplicates()),
            counter(QUEUE_PRODUCERS_EVICTED,
                    "Producers forgotten because the table was full (their later resends are stored again)", c -> c.producersEvicted()),
            counter(QUEUE_PRODUCERS_EXPIRED,
                    "Producers forgotten after the idle expiry (their later resends are stored again)", c -> c.producersExpired()),
            new QueueSeries(QUEUE_RECLAIMED_SEGMENTS, true, "Segments deleted since the store opened", m -> m.stats().reclaimedSegments()),
            new QueueSeries(QUEUE_RECLAIMED_BYTES, true, "Record bytes of the deleted segments", m -> m.stats().reclaimedBytes()),
            new QueueSeries(QUEUE_RELOCATED, true, "Stragglers moved forward so old segments could go", m -> m.stats().relocatedMessages()),
            new QueueSeries(QUEUE_RECLAIM_FAILURES, true, "Reclaim passes that failed; each is tried again, and what they would "
                    + "delete stays", m -> m.stats().failedReclaimPasses()),
            storeCounter(QUEUE_SYNCS, "Forces (fsyncs) of the queue's segments", QueueStore::syncCount),
            storeCounter(QUEUE_SYNC_SECONDS, "Time spent in those forces", s -> s.syncNanos() / 1e9),
            storeCounter(QUEUE_CORRUPT_RECORDS, "Records found damaged and skipped", QueueStore::corruptRecords),
            new QueueSeries(QUEUE_PRODUCER_CHECKPOINT_FAILURES, true,
                    "Producer checkpoints that could not be written (each tried again; meanwhile reclaim keeps what they would cover)",
                    m -> m.queue.producerCheckpointFailures()),
            new QueueSeries(QUEUE_BLOCKED_SECONDS, true, "Time the flow state was blocked (producers told to stop)", m -> {
                QueueSnapshot s = m.snapshot();
                return s == null ? 0 : s.blockedNanos() / 1e9;
            }));

    private static final List<QueueHistogram> HISTOGRAMS = List.of(
            new QueueHistogram(QUEUE_PUBLISH_CONFIRM_SECONDS,
                    "From a PUBLISH frame's arrival to the release of its CONFIRM, one sample per frame", m -> m.publishConfirm),
            new QueueHistogram(QUEUE_PUBLISH_ACK_SECONDS,
                    "From the append of the oldest message in an ACK frame to that frame, one sample per frame", m -> m.publishAck));

    private static final String INFO_HELP = "Constant 1; the labels carry the queue's durability mode and overflow policy";
    private static final String STALLED_HELP = "Consumers that get nothing, by reason: no credit left, or their connection is not writable";

    private final Supplier<List<QueueMeters>> liveQueues;

    /** {@code liveQueues} gives the meters of the queues that exist now; a deleted queue's must be gone from it. */
    QueueMetricsCollector(Supplier<List<QueueMeters>> liveQueues) {
        this.liveQueues = liveQueues;
    }

    @Override
    public MetricSnapshots collect() {
        List<QueueMeters> queues = liveQueues.get();
        if (queues.isEmpty()) {
            return new MetricSnapshots(); // no family at all, as when no queue had meters
        }
        Labels[] labels = new Labels[queues.size()];
        for (int i = 0; i < labels.length; i++) {
            labels[i] = Labels.of(LABEL_QUEUE, queues.get(i).queue.name());
        }
        List<MetricSnapshot> families = new ArrayList<>(SERIES.size() + 2 * HISTOGRAMS.size() + 2);
        for (QueueSeries series : SERIES) {
            families.add(series.counter ? counterFamily(series, queues, labels) : gaugeFamily(series, queues, labels));
        }
        families.add(infoFamily(queues));
        families.add(stalledFamily(queues, labels));
        for (QueueHistogram histogram : HISTOGRAMS) {
            addHistogramFamilies(histogram, queues, labels, families);
        }
        return new MetricSnapshots(families);
    }

    private static GaugeSnapshot gaugeFamily(QueueSeries series, List<QueueMeters> queues, Labels[] labels) {
        List<GaugeDataPointSnapshot> points = new ArrayList<>(queues.size());
        for (int i = 0; i < labels.length; i++) {
            points.add(new GaugeDataPointSnapshot(valueOf(series.value, queues.get(i)), labels[i], null));
        }
        return new GaugeSnapshot(metadata(series.name, Meter.Type.GAUGE, null, series.help), points);
    }

    private static CounterSnapshot counterFamily(QueueSeries series, List<QueueMeters> queues, Labels[] labels) {
        List<CounterDataPointSnapshot> points = new ArrayList<>(queues.size());
        for (int i = 0; i < labels.length; i++) {
            QueueMeters m = queues.get(i);
            points.add(new CounterDataPointSnapshot(valueOf(series.value, m), labels[i], null, m.createdMillis));
        }
        return new CounterSnapshot(metadata(series.name, Meter.Type.COUNTER, null, series.help), points);
    }

    private static GaugeSnapshot infoFamily(List<QueueMeters> queues) {
        List<GaugeDataPointSnapshot> points = new ArrayList<>(queues.size());
        for (QueueMeters m : queues) {
            Labels labels = Labels.of(LABEL_QUEUE, m.queue.name(),
                    LABEL_DURABILITY, m.queue.store().durability().configName(),
                    LABEL_OVERFLOW_POLICY, m.queue.options().quota().overflow().name().toLowerCase().replace('_', '-'));
            points.add(new GaugeDataPointSnapshot(1, labels, null));
        }
        return new GaugeSnapshot(metadata(QUEUE_INFO, Meter.Type.GAUGE, null, INFO_HELP), points);
    }

    /** Consumers that get nothing, two series per queue: one per {@link MetricNames#LABEL_REASON}. */
    private static GaugeSnapshot stalledFamily(List<QueueMeters> queues, Labels[] labels) {
        List<GaugeDataPointSnapshot> points = new ArrayList<>(2 * queues.size());
        for (int i = 0; i < labels.length; i++) {
            QueueSnapshot s = queues.get(i).snapshot();
            double noCredit = s == null ? Double.NaN : s.consumers().stream().filter(c -> c.credit() <= 0).count();
            double notWritable = s == null ? Double.NaN : s.consumers().stream().filter(c -> !c.writable()).count();
            points.add(new GaugeDataPointSnapshot(noCredit, labels[i].add(LABEL_REASON, REASON_NO_CREDIT), null));
            points.add(new GaugeDataPointSnapshot(notWritable, labels[i].add(LABEL_REASON, REASON_NOT_WRITABLE), null));
        }
        return new GaugeSnapshot(metadata(QUEUE_CONSUMERS_STALLED, Meter.Type.GAUGE, null, STALLED_HELP), points);
    }

    /** The histogram family and its {@code _max} gauge family, as Micrometer's Prometheus registry exposes a timer. */
    private static void addHistogramFamilies(QueueHistogram family, List<QueueMeters> queues, Labels[] labels,
                                             List<MetricSnapshot> families) {
        List<HistogramDataPointSnapshot> points = new ArrayList<>(queues.size());
        List<GaugeDataPointSnapshot> maxima = new ArrayList<>(queues.size());
        for (int i = 0; i < labels.length; i++) {
            QueueMeters m = queues.get(i);
            LatencyHistogram h = family.histogram.apply(m);
            ClassicHistogramBuckets buckets = ClassicHistogramBuckets.of(h.upperBoundsSeconds(), h.bucketCounts());
            points.add(new HistogramDataPointSnapshot(buckets, h.sumSeconds(), labels[i], Exemplars.EMPTY, m.createdMillis));
            maxima.add(new GaugeDataPointSnapshot(h.maxSeconds(), labels[i], null));
        }
        MetricMetadata histogram = metadata(family.name, Meter.Type.TIMER, "seconds", family.help);
        families.add(new HistogramSnapshot(false, histogram, points));
        families.add(new GaugeSnapshot(new MetricMetadata(histogram.getName() + "_max", family.help, null), maxima));
    }

    private static MetricMetadata metadata(String name, Meter.Type type, String baseUnit, String help) {
        return new MetricMetadata(NAMING.name(name, type, baseUnit), help, null);
    }

    /** A figure that cannot be read (a queue closing under the scrape) is unknown, not a failed scrape. */
    private static double valueOf(ToDoubleFunction<QueueMeters> value, QueueMeters m) {
        try {
            return value.applyAsDouble(m);
        } catch (RuntimeException e) {
            return Double.NaN;
        }
    }

    private static QueueSeries snapshotGauge(String name, String help, ToDoubleFunction<QueueSnapshot> value) {
        return new QueueSeries(name, false, help, m -> {
            QueueSnapshot s = m.snapshot();
            return s == null ? Double.NaN : value.applyAsDouble(s);
        });
    }

    private static QueueSeries statsGauge(String name, String help, ToDoubleFunction<BacklogStats> value) {
        return new QueueSeries(name, false, help, m -> value.applyAsDouble(m.stats()));
    }

    private static QueueSeries counter(String name, String help, ToDoubleFunction<QueueSnapshot.Counters> value) {
        return new QueueSeries(name, true, help, m -> value.applyAsDouble(m.counters()));
    }

    private static QueueSeries storeCounter(String name, String help, ToDoubleFunction<QueueStore> value) {
        return new QueueSeries(name, true, help, m -> value.applyAsDouble(m.queue.store()));
    }
}
