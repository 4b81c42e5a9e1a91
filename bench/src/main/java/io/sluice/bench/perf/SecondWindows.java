package io.sluice.bench.perf;

import org.HdrHistogram.Histogram;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Events of a run cut into one-second windows, to find the run's worst second. Not thread-safe: the caller
 * records under its own lock.
 *
 * <p>Rule "windows": window {@code k} holds the events with {@code origin + k s <= time < origin + (k + 1) s}
 * (an event before the origin counts in window 0). Rule "worst": only the windows that end at or before the
 * run's end count, so the last, partial window (and every window of a run shorter than one second) is left out:
 * its low count would say how the run ended, not that it stalled. The worst rate is the fewest events in a
 * counted window, zero for a window with none; the worst p99 is the highest p99 of the latencies recorded in
 * one counted window, over the windows that recorded any.
 */
final class SecondWindows {
    private static final long WINDOW_NANOS = 1_000_000_000L;
    /**
     * The precision of the run's own histograms, so that no window's p99 reads above the run's maximum. Only a
     * second that received messages gets a histogram, so a run holds one per second of receipts.
     */
    private static final int WINDOW_DIGITS = 3;

    private final long originNanos;
    private long[] counts = new long[16];
    /** Windows from the origin to the last one with an event. */
    private int windows;
    private final List<Histogram> latencies = new ArrayList<>();

    SecondWindows(long originNanos) {
        this.originNanos = originNanos;
    }

    long originNanos() {
        return originNanos;
    }

    /** Counts one event at {@code timeNanos} (System.nanoTime()). */
    void record(long timeNanos) {
        count(window(timeNanos));
    }

    /** Counts one event at {@code timeNanos} and records its latency. */
    void record(long timeNanos, long latencyMicros) {
        int window = window(timeNanos);
        count(window);
        while (latencies.size() <= window) {
            latencies.add(null);
        }
        Histogram histogram = latencies.get(window);
        if (histogram == null) {
            histogram = new Histogram(1, LatencyStats.HIGHEST_MICROS, WINDOW_DIGITS);
            latencies.set(window, histogram);
        }
        histogram.recordValue(Math.min(LatencyStats.HIGHEST_MICROS, Math.max(1, latencyMicros)));
    }

    /** Events per window from the origin to the last window with one, the partial last window included. */
    long[] perSecond() {
        return Arrays.copyOf(counts, windows);
    }

    /** p99 latency per window, as {@link #perSecond()}; 0 for a window that recorded none. */
    long[] p99PerSecondMicros() {
        long[] result = new long[windows];
        for (int i = 0; i < latencies.size(); i++) {
            Histogram histogram = latencies.get(i);
            result[i] = histogram == null ? 0 : histogram.getValueAtPercentile(99);
        }
        return result;
    }

    /** The worst counted window (rule "worst") of a run that ended at {@code endNanos}. */
    Worst worst(long endNanos) {
        long full = Math.max(0, (endNanos - originNanos) / WINDOW_NANOS);
        int counted = (int) Math.min(full, Integer.MAX_VALUE);
        long lowest = -1;
        int lowestAt = -1;
        long highestP99 = -1;
        int highestP99At = -1;
        for (int i = 0; i < counted; i++) {
            long count = i < windows ? counts[i] : 0;
            if (lowestAt < 0 || count < lowest) {
                lowest = count;
                lowestAt = i;
            }
            Histogram histogram = i < latencies.size() ? latencies.get(i) : null;
            if (histogram != null && histogram.getValueAtPercentile(99) > highestP99) {
                highestP99 = histogram.getValueAtPercentile(99);
                highestP99At = i;
            }
        }
        return new Worst(counted, lowest, lowestAt, highestP99, highestP99At);
    }

    private int window(long timeNanos) {
        long window = Math.max(0, (timeNanos - originNanos) / WINDOW_NANOS);
        if (window > Integer.MAX_VALUE - 1) {
            throw new IllegalArgumentException("event " + window + " s after the origin is past the last window");
        }
        return (int) window;
    }

    private void count(int window) {
        if (window >= counts.length) {
            counts = Arrays.copyOf(counts, Math.max(window + 1, 2 * counts.length));
        }
        counts[window]++;
        windows = Math.max(windows, window + 1);
    }

    /**
     * The worst of the counted windows; the rate fields are -1 where no window counts, the p99 fields where no
     * counted window recorded a latency.
     *
     * @param windows       how many windows counted (rule "worst")
     * @param lowestRate    the fewest events in one counted window: events per second in the worst second
     * @param lowestAt      that window's index: seconds from the origin to its start
     * @param highestP99Micros the highest p99 latency of one counted window
     * @param highestP99At  that window's index
     */
    record Worst(int windows, long lowestRate, int lowestAt, long highestP99Micros, int highestP99At) {
    }
}
