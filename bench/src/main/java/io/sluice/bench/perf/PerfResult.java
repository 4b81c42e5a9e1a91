package io.sluice.bench.perf;

import org.HdrHistogram.Histogram;

import java.util.List;
import java.util.Locale;

/**
 * What one perf run measured. Rates are messages per second; latencies are end to end (send nanoTime in the
 * payload to the consumer's handler) in microseconds, over the messages received after the first 20 %.
 *
 * @param callbacks       where the client ran the callbacks: "network" (its network thread), "dispatch", or
 *                        "network, paced consumers dispatch" (a paced handler sleeps)
 * @param publishRate     confirmed messages from the first send to the last confirm
 * @param endToEndRate    unique received messages from the first send to the last receipt
 * @param drainRate       for a drain-after-publish run: unique received from subscribe to the last receipt,
 *                        otherwise -1
 * @param series          one point per second of the run, in order
 * @param transactions    for a {@code --transactional} run what its transactions did (then the receipts, loss,
 *                        duplicates and latency are the second queue's), otherwise null
 */
record PerfResult(String workload, String broker, long messages, int sizeBytes, int producers, int consumers,
                  String callbacks,
                  long sent, long confirmed, long failed, long received, long lost, long duplicates,
                  double publishRate, double endToEndRate, double drainRate, double publishSeconds,
                  double drainSeconds, Histogram latency, List<ProgressPoint> series, boolean includeSeries,
                  TransactionResult transactions) {

    /** One JSON object on one line; field names are the contract with scripts and CI. */
    String toJson() {
        return toJson("");
    }

    /** As {@link #toJson()}, with {@code moreFields} ({@code "name":value,...}, no trailing comma) at the end. */
    String toJson(String moreFields) {
        StringBuilder json = new StringBuilder(256);
        json.append('{');
        field(json, "workload", quote(workload));
        field(json, "broker", quote(broker));
        field(json, "msgs", messages);
        field(json, "size", sizeBytes);
        field(json, "producers", producers);
        field(json, "consumers", consumers);
        field(json, "callbacks", quote(callbacks));
        field(json, "sent", sent);
        field(json, "confirmed", confirmed);
        field(json, "failed", failed);
        field(json, "received", received);
        field(json, "lost", lost);
        field(json, "dups", duplicates);
        field(json, "publish_rate", round(publishRate));
        field(json, "publish_seconds", round(publishSeconds));
        field(json, "e2e_rate", round(endToEndRate));
        if (drainRate >= 0) {
            field(json, "drain_rate", round(drainRate));
            field(json, "drain_seconds", round(drainSeconds));
        }
        field(json, "latency_samples", latency.getTotalCount());
        field(json, "p50_us", latency.getValueAtPercentile(50));
        field(json, "p99_us", latency.getValueAtPercentile(99));
        field(json, "p999_us", latency.getValueAtPercentile(99.9));
        field(json, "max_us", latency.getMaxValue());
        if (includeSeries) {
            StringBuilder points = new StringBuilder("[");
            for (ProgressPoint point : series) {
                if (points.length() > 1) {
                    points.append(',');
                }
                points.append(point.toJson());
            }
            field(json, "series", points.append(']').toString());
        }
        json.setLength(json.length() - 1);
        if (transactions != null) {
            json.append(',').append(transactions.toJsonFields());
        }
        if (!moreFields.isEmpty()) {
            json.append(',').append(moreFields);
        }
        return json.append('}').toString();
    }

    /** The human summary printed at the end of a run. */
    String toSummary() {
        StringBuilder text = new StringBuilder();
        text.append(String.format(Locale.ROOT,
                "workload %s, broker '%s': %d producers, %d consumers, %d bytes, callbacks: %s%n",
                workload, broker, producers, consumers, sizeBytes, callbacks));
        text.append(String.format(Locale.ROOT, "sent %d, confirmed %d, failed %d, received %d, lost %d, duplicates %d%n",
                sent, confirmed, failed, received, lost, duplicates));
        text.append(String.format(Locale.ROOT, "publish %.0f msg/s over %.2f s (first send to last confirm)%n",
                publishRate, publishSeconds));
        text.append(String.format(Locale.ROOT, "end to end %.0f msg/s (first send to last receipt)%n", endToEndRate));
        if (drainRate >= 0) {
            text.append(String.format(Locale.ROOT, "drain %.0f msg/s over %.2f s (subscribe to last receipt)%n",
                    drainRate, drainSeconds));
        }
        text.append(String.format(Locale.ROOT,
                "latency over the last 80%% (%d samples): p50 %d us, p90 %d us, p99 %d us, p99.9 %d us, max %d us%n",
                latency.getTotalCount(), latency.getValueAtPercentile(50), latency.getValueAtPercentile(90),
                latency.getValueAtPercentile(99), latency.getValueAtPercentile(99.9), latency.getMaxValue()));
        if (transactions != null) {
            text.append(transactions.toSummary());
        }
        return text.toString();
    }

    private static void field(StringBuilder json, String name, Object value) {
        json.append('"').append(name).append("\":").append(value).append(',');
    }

    private static String round(double value) {
        return String.format(Locale.ROOT, "%.1f", value);
    }

    static String quote(String text) {
        StringBuilder quoted = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"' -> quoted.append("\\\"");
                case '\\' -> quoted.append("\\\\");
                default -> {
                    if (c < 0x20) {
                        quoted.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        quoted.append(c);
                    }
                }
            }
        }
        return quoted.append('"').toString();
    }
}
