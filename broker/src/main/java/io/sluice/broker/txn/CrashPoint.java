package io.sluice.broker.txn;

/**
 * Named points where a crash test stops the broker as kill -9 would: the points of a commit here, those of a
 * cluster's snapshot install ({@code cluster.SnapshotInstaller}), which calls {@link #reached} too, and of a cluster
 * node's apply
 * ({@link Runtime#halt}: no shutdown hook, no flush, only what is already in the page cache stays).
 * The system property {@code sluice.crash-point} names the point; unset, as in production, a point
 * costs one comparison with null.
 */
public final class CrashPoint {
    /**
     * A commit's staged messages are stored in their queues (durable, when the record goes to the log); its
     * commit record is about to be written, in the log or in its one target queue (T5).
     */
    static final String BEFORE_COMMIT_RECORD = "txn-before-commit-record";
    /** A commit record is durable and nothing of it is applied yet (its staged messages pending, its acks held). */
    static final String AFTER_COMMIT_RECORD = "txn-after-commit-record";
    /** One queue's part of a commit is applied (visible, acknowledged); its other queues' parts may not be. */
    static final String AFTER_A_QUEUE_APPLIED = "txn-after-a-queue-applied";
    /** Every part of a commit is applied and its acknowledgements durable; its record is not finished. */
    static final String BEFORE_FINISH = "txn-before-finish";
    /** Recovery discarded what never committed and applied a commit's acknowledgements again; its record is not finished. */
    static final String RECOVERY_BEFORE_FINISH = "txn-recovery-before-finish";

    /**
     * A queue's delete has closed it and waited for the acknowledgements of the commits whose records it keeps
     * (X5); its files, with those records, are about to be deleted.
     */
    static final String QUEUE_DELETE_AFTER_X5 = "txn-queue-delete-after-x5";

    /**
     * A cluster node stored a dead-letter copy (rule R8 of docs/replication.md) and it is durable; the original is not
     * yet acknowledged in its source, so the node replays the entry when it starts again.
     */
    public static final String CLUSTER_DEAD_LETTER_COPY_DURABLE = "cluster-dead-letter-copy-durable";

    private static final String CHOSEN = System.getProperty("sluice.crash-point");

    private CrashPoint() {
    }

    public static void reached(String point) {
        if (CHOSEN != null && CHOSEN.equals(point)) {
            System.err.println("sluice.crash-point " + point + " reached: halting");
            Runtime.getRuntime().halt(137);
        }
    }
}
