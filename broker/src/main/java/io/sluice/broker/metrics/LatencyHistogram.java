package io.sluice.broker.metrics;

import io.micrometer.core.instrument.Clock;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.micrometer.core.instrument.distribution.TimeWindowMax;
import io.micrometer.prometheusmetrics.PrometheusConfig;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * One queue's latency distribution over fixed bucket bounds, in the few hundred bytes a Prometheus
 * classic histogram needs: a count per bucket (the last one past every bound, Prometheus' {@code +Inf}),
 * the sum of the samples and a time-window maximum. It replaces a Micrometer {@code Timer} with service
 * level objectives, whose meter ids, tag lists, histogram ring buffers and collector entries cost several
 * kilobytes per queue; what Prometheus sees is the same (the same bounds, counts that only grow, the
 * sum in seconds, and {@code _max} decaying as the Prometheus registry's timers do: Micrometer's
 * {@link TimeWindowMax} with that registry's step and buffer length).
 *
 * <p>A sample {@code v} counts in the first bucket whose bound is {@code >= v}, Prometheus' {@code le}
 * and what Micrometer's fixed-boundary histogram does; negative samples are ignored, as a timer does.
 *
 * <p>Threads: {@link #recordNanos} runs on the owning queue's executor (one sample per frame);
 * {@link #cumulativeCounts}, {@link #sumSeconds} and {@link #maxSeconds} on the scraping thread. The
 * counts and the sum are atomics, so each is read whole; a scrape concurrent with a sample may see it
 * in its bucket and not yet in the sum, the window Micrometer's timers had too.
 */
final class LatencyHistogram {
    /** The Prometheus registry's configuration of a timer's maximum: rotated every step, over three buffers. */
    private static final DistributionStatisticConfig MAX_WINDOW = DistributionStatisticConfig.builder()
            .expiry(PrometheusConfig.DEFAULT.step()).build().merge(DistributionStatisticConfig.DEFAULT);

    /** Bucket upper bounds in nanoseconds, ascending; shared by every histogram of the same kind. */
    private final long[] boundsNanos;
    /** Slots {@code 0..n-1}: samples per bucket; slot {@code n}: above the last bound; slot {@code n+1}: the sum in nanoseconds. */
    private final AtomicLongArray slots;
    private final TimeWindowMax max;

    LatencyHistogram(long[] boundsNanos, Clock clock) {
        this.boundsNanos = boundsNanos;
        this.slots = new AtomicLongArray(boundsNanos.length + 2);
        this.max = new TimeWindowMax(clock, MAX_WINDOW);
    }

    void recordNanos(long nanos) {
        if (nanos < 0) {
            return;
        }
        int bucket = 0;
        while (bucket < boundsNanos.length && nanos > boundsNanos[bucket]) {
            bucket++;
        }
        slots.incrementAndGet(bucket);
        slots.addAndGet(boundsNanos.length + 1, nanos);
        max.record(nanos, TimeUnit.NANOSECONDS);
    }

    /** The bucket bounds in seconds, then {@code +Inf}. */
    double[] upperBoundsSeconds() {
        double[] bounds = new double[boundsNanos.length + 1];
        for (int i = 0; i < boundsNanos.length; i++) {
            bounds[i] = boundsNanos[i] / 1e9;
        }
        bounds[boundsNanos.length] = Double.POSITIVE_INFINITY;
        return bounds;
    }

    /** Samples per bucket (not cumulative), the last past every bound; their total is the sample count. */
    long[] bucketCounts() {
        long[] counts = new long[boundsNanos.length + 1];
        for (int i = 0; i < counts.length; i++) {
            counts[i] = slots.get(i);
        }
        return counts;
    }

    double sumSeconds() {
        return slots.get(boundsNanos.length + 1) / 1e9;
    }

    /** The largest sample of the last two to three minutes, in seconds (0 when there is none). */
    double maxSeconds() {
        return max.poll(TimeUnit.SECONDS);
    }

    /** Bounds given in milliseconds (fractions allowed), as nanoseconds. */
    static long[] boundsMillis(double... millis) {
        long[] out = new long[millis.length];
        for (int i = 0; i < millis.length; i++) {
            out[i] = (long) (millis[i] * 1_000_000);
        }
        return out;
    }
}
