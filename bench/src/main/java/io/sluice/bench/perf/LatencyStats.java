package io.sluice.bench.perf;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.SingleWriterRecorder;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * End-to-end latency in microseconds: per second for the progress line, and over the run for the summary,
 * which only takes the samples the caller marks as past the warm-up. Each consumer records through a
 * {@link Writer} of its own (its handler runs on one thread at a time), so recording takes no lock and touches
 * no counter another consumer writes (the shared {@code Recorder} and a synchronised summary cost the CLI
 * about 5 % of its CPU under W1); readers take the writers' samples through HdrHistogram's interval swap.
 * Thread-safe.
 */
final class LatencyStats {
    /** One hour: a message can wait in a W2 or W3 backlog for a long time. */
    static final long HIGHEST_MICROS = 3_600_000_000L;

    private final List<Writer> writers = new CopyOnWriteArrayList<>();
    private final Histogram interval = new Histogram(1, HIGHEST_MICROS, 3);
    private final Histogram summary = new Histogram(1, HIGHEST_MICROS, 3);

    /** A recorder for one writing thread at a time (one consumer's handler). */
    Writer newWriter() {
        Writer writer = new Writer();
        writers.add(writer);
        return writer;
    }

    /** The samples since the previous call, over all writers; only the progress thread calls this. */
    synchronized Histogram takeInterval() {
        interval.reset();
        for (Writer writer : writers) {
            writer.intervalBuffer = writer.interval.getIntervalHistogram(writer.intervalBuffer);
            interval.add(writer.intervalBuffer);
        }
        return interval;
    }

    /** Every summary sample so far, over all writers. */
    synchronized Histogram summaryCopy() {
        for (Writer writer : writers) {
            writer.summaryBuffer = writer.summary.getIntervalHistogram(writer.summaryBuffer);
            summary.add(writer.summaryBuffer);
        }
        return summary.copy();
    }

    static final class Writer {
        private final SingleWriterRecorder interval = new SingleWriterRecorder(1, HIGHEST_MICROS, 3);
        private final SingleWriterRecorder summary = new SingleWriterRecorder(1, HIGHEST_MICROS, 3);
        // Owned by the reader, under the LatencyStats lock.
        private Histogram intervalBuffer;
        private Histogram summaryBuffer;

        void record(long latencyNanos, boolean inSummary) {
            long micros = Math.min(HIGHEST_MICROS, Math.max(1, latencyNanos / 1_000));
            interval.recordValue(micros);
            if (inSummary) {
                summary.recordValue(micros);
            }
        }
    }
}
