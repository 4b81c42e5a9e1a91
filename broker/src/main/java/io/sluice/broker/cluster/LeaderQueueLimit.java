package io.sluice.broker.cluster;

import io.sluice.broker.error.BrokerException;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueManager;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * {@code limits.max-queues} on a cluster (rule R2 of docs/replication.md, "The queue count"): the leader checks it before
 * it submits an entry that can create a queue (a declare, a dead-letter, whose entry declares its dead-letter queue if
 * that is gone), and every node applies the committed entry without it ({@link QueueManager#declareCommitted}). A node
 * that checked its own catalog when it applied a declare decided again on a replay, against a catalog that already
 * reflected later deletes, and could create a queue the others had refused.
 *
 * <p>Exact, not passed by entries in flight: each such entry holds its queue's name here from before it is submitted
 * until it is applied on this node or Raft refuses it, and a held name counts as a queue whether this node holds the
 * queue yet (or still) or not. So two declares of new queues submitted at once with one place free never both get it,
 * and a dead-letter queue deleted while a dead-letter's entry is in flight is still counted when that entry declares it
 * again. A leader change between the check and the apply passes nothing either: a new leader serves (and so checks)
 * only once it has applied every entry committed when it became ready, the old leader's included, and an entry it never
 * got is lost. Only the leader's limit counts: one configured differently on another node takes effect when that node
 * leads.
 *
 * <p>Threads: thread-safe; held on connections' event loops and queues' executors, released on whichever thread answers
 * the entry (the state machine's, Ratis's).
 */
final class LeaderQueueLimit {
    private final QueueManager queues;
    private final int maxQueues;
    /** Per queue name, how many entries in flight hold it. */
    private final Map<String, Integer> held = new HashMap<>();

    LeaderQueueLimit(QueueManager queues, int maxQueues) {
        this.queues = queues;
        this.maxQueues = maxQueues;
    }

    /**
     * Holds {@code name} for an entry about to be submitted; the returned action lets go of it (once the entry is applied
     * here or refused; running it again does nothing). A queue that exists or is held already takes no new place.
     *
     * @throws BrokerException RESOURCE_LIMIT, in the words a single broker uses ({@link QueueManager#tooManyQueues}), if
     *                         one more queue would pass {@code limits.max-queues}
     */
    synchronized Runnable hold(String name) {
        if (queues.get(name) == null && !held.containsKey(name)) {
            int count = count() + 1;
            if (count > maxQueues) {
                throw QueueManager.tooManyQueues(name, count, maxQueues);
            }
        }
        held.merge(name, 1, Integer::sum);
        AtomicBoolean released = new AtomicBoolean();
        return () -> {
            if (released.compareAndSet(false, true)) {
                release(name);
            }
        };
    }

    private synchronized void release(String name) {
        held.computeIfPresent(name, (n, holders) -> holders == 1 ? null : holders - 1);
    }

    /**
     * The queues this node holds and the held names, each name once. The state machine thread creates and deletes
     * queues meanwhile: a held name counts whichever side of its apply this reads, and a queue gone before it is read was
     * deleted by an entry applied before anything submitted now. The sum of the two sizes is never below the union, so
     * the union is only counted when that sum reaches the limit.
     */
    private int count() {
        int upTo = queues.all().size() + held.size();
        if (upTo < maxQueues) {
            return upTo;
        }
        Set<String> names = new HashSet<>(held.keySet());
        for (BrokerQueue queue : queues.all()) {
            names.add(queue.name());
        }
        return names.size();
    }
}
