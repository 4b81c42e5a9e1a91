package io.sluice.broker.cluster;

/**
 * Bounds the bytes of log entries this node has handed to its queues and they have not applied yet.
 *
 * <p>Ratis's updater calls {@link ShardStateMachine#applyTransaction} for every committed entry without waiting for the
 * one before it to be applied: the state machine copies the entry and the queues' executors store it later. A node
 * far behind the commit index (a follower resumed after a stop, or restarted) thus copied its whole backlog of
 * entries onto the heap at once, faster than its queues stored them, and ran out of memory (ClusterSlowFollowerTest:
 * 150 MiB behind on a 256 MiB heap). With this budget the updater waits while the entries in its queues' hands reach
 * the bound, so a node catches up at the pace its stores take, with bounded memory (docs/replication.md, "Memory").
 *
 * <p>Waiting is safe because an entry's apply completes on the queues' executors without waiting for any later entry.
 * An entry larger than the whole budget goes alone.
 *
 * <p>Threads: {@link #acquire} on Ratis's state machine updater, {@link #release} on the queues' executors.
 */
final class ApplyBudget {
    private final long maxBytes;
    private long inFlightBytes; // guarded by this

    ApplyBudget(long maxBytes) {
        if (maxBytes <= 0) {
            throw new IllegalArgumentException("an apply budget of " + maxBytes + " bytes");
        }
        this.maxBytes = maxBytes;
    }

    /**
     * A sixteenth of the heap, at least two of the largest entries (one being applied while the next is copied), so
     * that a default heap keeps a few hundred batches in flight and a small one does not run out.
     */
    static ApplyBudget forHeap(long heapBytes, long largestEntryBytes) {
        return new ApplyBudget(Math.max(2 * largestEntryBytes, heapBytes / 16));
    }

    /** Waits until {@code bytes} more fit, or nothing else is in flight. */
    synchronized void acquire(long bytes) throws InterruptedException {
        while (inFlightBytes > 0 && inFlightBytes + bytes > maxBytes) {
            wait();
        }
        inFlightBytes += bytes;
    }

    synchronized void release(long bytes) {
        inFlightBytes -= bytes;
        notifyAll();
    }

    synchronized long inFlightBytes() {
        return inFlightBytes;
    }

    long maxBytes() {
        return maxBytes;
    }
}
