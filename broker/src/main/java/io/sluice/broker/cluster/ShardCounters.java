package io.sluice.broker.cluster;

import java.util.concurrent.atomic.LongAdder;

/**
 * What one shard did on this node since it started, for the metrics ({@code sluice_cluster_*}) and the
 * admin API: leader changes it heard of, entries (and their bytes) it submitted as the leader, and
 * entries (and their bytes) it applied, as every node applies them. The applied bytes are the shard's
 * replication traffic as this node's store received it.
 *
 * <p>Threads: thread-safe. Ratis's server threads count leader changes, the submitting event loops count
 * submissions, the state machine's updater thread counts what it applied; scrapes read.
 */
public final class ShardCounters {
    private final LongAdder leaderChanges = new LongAdder();
    private final LongAdder submittedEntries = new LongAdder();
    private final LongAdder submittedBytes = new LongAdder();
    private final LongAdder appliedEntries = new LongAdder();
    private final LongAdder appliedBytes = new LongAdder();

    void leaderChanged() {
        leaderChanges.increment();
    }

    void submitted(int bytes) {
        submittedEntries.increment();
        submittedBytes.add(bytes);
    }

    void applied(int bytes) {
        appliedEntries.increment();
        appliedBytes.add(bytes);
    }

    /** Leader changes this node heard of, its own elections included. */
    /** Adds the counters to a node's status ({@code GET /api/cluster}). */
    void describe(java.util.Map<String, Object> status) {
        status.put("leaderChanges", leaderChanges());
        status.put("appliedEntries", appliedEntries());
        status.put("appliedBytes", appliedBytes());
        status.put("submittedEntries", submittedEntries());
        status.put("submittedBytes", submittedBytes());
    }

    public long leaderChanges() {
        return leaderChanges.sum();
    }

    /** Entries this node submitted to the shard's log (as its leader), refused ones included. */
    public long submittedEntries() {
        return submittedEntries.sum();
    }

    public long submittedBytes() {
        return submittedBytes.sum();
    }

    /** Entries this node applied to its queues (every committed entry, on every node). */
    public long appliedEntries() {
        return appliedEntries.sum();
    }

    public long appliedBytes() {
        return appliedBytes.sum();
    }
}
