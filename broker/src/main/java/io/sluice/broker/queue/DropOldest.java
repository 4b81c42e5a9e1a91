package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import io.sluice.storage.CorruptRecordException;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoredMessage;

import java.util.List;

/**
 * The {@code drop-oldest} overflow policy of one queue (docs/flow-control.md): discards the oldest
 * unacknowledged message not out with a consumer, or dead-letters it if the queue says so. On a cluster the
 * leader decides alone (which message is out with a consumer is its own state), so the drop is replicated as an
 * ack of that id, submitted before the PUBLISH that made room for itself, and a dead-letter goes through rule R8;
 * followers drop exactly what the leader dropped (docs/replication.md, rule R9).
 *
 * <p>Threads: the queue's executor.
 */
final class DropOldest {
    /** Where a dropped message goes when the queue dead-letters what it drops. */
    interface DeadLetter {
        void deadLetter(StoredMessage message, int deliveries, String reason);
    }

    private final BrokerQueue queue;
    private final QueueStore store;
    private final IdSet tracked;
    private final QueueTransactions transactions;
    private final Backlog backlog;
    private final QueueManager manager;
    private final DeadLetter deadLetter;
    private long dropped;

    DropOldest(BrokerQueue queue, QueueStore store, IdSet tracked, QueueTransactions transactions, Backlog backlog,
               QueueManager manager, DeadLetter deadLetter) {
        this.queue = queue;
        this.store = store;
        this.tracked = tracked;
        this.transactions = transactions;
        this.backlog = backlog;
        this.manager = manager;
        this.deadLetter = deadLetter;
    }

    /**
     * Discards the oldest unacknowledged message not out with a consumer; false if there is none. Every message
     * the queue tracks is skipped at most once, so the walk is bounded by the deliveries outstanding, not by the
     * backlog.
     */
    boolean dropOne() {
        long id = store.oldestUnacked(x -> tracked.contains(x) || transactions.isPending(x), tracked.size() + transactions.pendingCount());
        if (id < 0) {
            return false;
        }
        StoredMessage m;
        try {
            m = store.read(id);
        } catch (CorruptRecordException e) {
            dropped++;
            return true; // the store discarded the damaged record: room was made all the same
        }
        if (m == null) {
            return false;
        }
        dropped++;
        if (queue.options().deadLetterDropped()) {
            // Room is made for this publish at once; the message leaves once its copy is durable.
            deadLetter.deadLetter(m, m.deliveryCount(), "dropped to make room: " + backlog.quotaReason());
        } else {
            store.ack(id);
            backlog.removed(m.headersLength() + m.payloadLength());
            Replication replication = manager.replication();
            if (replication != null) {
                replication.acked(queue, List.of(IdRange.single(id)));
            }
        }
        return true;
    }

    /** Messages dropped since the queue opened. */
    long dropped() {
        return dropped;
    }
}
