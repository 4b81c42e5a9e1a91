package io.sluice.bench.perf;

import org.HdrHistogram.Histogram;

import java.util.Locale;

/**
 * What the transactions of a {@code --transactional} run did, beside the {@link PerfResult} of the messages
 * (whose receipts, loss, duplicates and latency are those of the second queue).
 *
 * @param consumed          deliveries the transactional consumers took from the first queue, redeliveries included
 * @param commits           transactions committed (the broker answered OK)
 * @param committedMessages deliveries forwarded by committed transactions
 * @param failed            transactions that failed: rolled back by the broker, or a commit without an OK
 * @param commitRate        committed messages per second, from the first send to the last commit's OK
 * @param commitLatency     microseconds from {@code commitAsync} to its OK, of the commits begun after the
 *                          first 20 % of the messages were committed
 */
record TransactionResult(int messagesPerTransaction, int commitsInFlight, long consumed, long commits,
                         long committedMessages, long failed, double commitRate, Histogram commitLatency) {

    /** The fields appended to the run's JSON object ({@code "name":value,...}, no trailing comma). */
    String toJsonFields() {
        return String.format(Locale.ROOT, "\"transactional\":true,\"tx_batch\":%d,\"tx_in_flight\":%d,\"tx_consumed\":%d,"
                        + "\"tx_commits\":%d,\"tx_committed\":%d,\"tx_failed\":%d,\"tx_commit_rate\":%.1f,"
                        + "\"commit_samples\":%d,\"commit_p50_us\":%d,\"commit_p99_us\":%d,\"commit_p999_us\":%d,\"commit_max_us\":%d",
                messagesPerTransaction, commitsInFlight, consumed, commits, committedMessages, failed, commitRate,
                commitLatency.getTotalCount(), commitLatency.getValueAtPercentile(50), commitLatency.getValueAtPercentile(99),
                commitLatency.getValueAtPercentile(99.9), commitLatency.getMaxValue());
    }

    String toSummary() {
        return String.format(Locale.ROOT, "transactions of up to %d messages, %d commits in flight per consumer: consumed %d,"
                        + " committed %d in %d commits, failed %d%n"
                        + "committed %.0f msg/s (first send to last commit)%n"
                        + "commit latency (%d samples): p50 %d us, p99 %d us, p99.9 %d us, max %d us%n",
                messagesPerTransaction, commitsInFlight, consumed, committedMessages, commits, failed, commitRate,
                commitLatency.getTotalCount(), commitLatency.getValueAtPercentile(50), commitLatency.getValueAtPercentile(99),
                commitLatency.getValueAtPercentile(99.9), commitLatency.getMaxValue());
    }
}
