package io.sluice.bench.perf;

import java.util.Locale;

/**
 * One second of a run as the progress line shows it.
 *
 * @param seconds       seconds since the run started
 * @param publishRate   sendAsync calls that returned in this second
 * @param confirmRate   confirms in this second
 * @param consumeRate   receipts in this second (duplicates included)
 * @param backlog       confirmed minus uniquely received: an estimate of what waits in the broker
 * @param p50Micros     end-to-end latency of this second's receipts, 0 when none
 * @param flowState     the most restrictive FLOW state any producer was last told
 */
record ProgressPoint(long seconds, long publishRate, long confirmRate, long consumeRate, long backlog,
                     long p50Micros, long p99Micros, String flowState) {

    String toLine() {
        return String.format(Locale.ROOT,
                "t=%ds publish=%d/s confirm=%d/s consume=%d/s latency p50=%.2fms p99=%.2fms backlog=%d flow=%s",
                seconds, publishRate, confirmRate, consumeRate, p50Micros / 1000.0, p99Micros / 1000.0, backlog,
                flowState);
    }

    String toJson() {
        return String.format(Locale.ROOT,
                "{\"t\":%d,\"backlog\":%d,\"publish_rate\":%d,\"confirm_rate\":%d,\"consume_rate\":%d,"
                        + "\"p50_us\":%d,\"p99_us\":%d,\"state\":\"%s\"}",
                seconds, backlog, publishRate, confirmRate, consumeRate, p50Micros, p99Micros, flowState);
    }
}
