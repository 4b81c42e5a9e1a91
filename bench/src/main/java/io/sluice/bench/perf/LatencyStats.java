package io.sluice.bench.perf;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * End-to-end latency in microseconds: an interval recorder for the progress line (reset each second) and
 * one histogram for the summary, which only takes the samples the caller marks as past the warm-up.
 * Thread-safe.
 */
final class LatencyStats {
    /** One hour: a message can wait in a W2 or W3 backlog for a long time. */
    private static final long HIGHEST_MICROS = 3_600_000_000L;

    private final Recorder interval = new Recorder(1, HIGHEST_MICROS, 3);
    private final Histogram summary = new Histogram(1, HIGHEST_MICROS, 3);
    private Histogram intervalBuffer;

    void record(long latencyNanos, boolean inSummary) {
        long micros = Math.min(HIGHEST_MICROS, Math.max(1, latencyNanos / 1_000));
        interval.recordValue(micros);
        if (inSummary) {
            synchronized (summary) {
                summary.recordValue(micros);
            }
        }
    }

    /** The samples since the previous call; only the progress thread calls this. */
    Histogram takeInterval() {
        intervalBuffer = interval.getIntervalHistogram(intervalBuffer);
        return intervalBuffer;
    }

    Histogram summaryCopy() {
        synchronized (summary) {
            return summary.copy();
        }
    }
}
