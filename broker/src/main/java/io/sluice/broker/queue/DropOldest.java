package io.sluice.broker.queue;

import io.sluice.storage.CorruptRecordException;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoredMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.CompletableFuture;
import java.util.function.LongPredicate;

/**
 * The {@code drop-oldest} overflow policy of one queue (docs/flow-control.md): discards the oldest
 * unacknowledged message not out with a consumer, or dead-letters it if the queue says so. On a cluster the
 * leader decides alone (which message is out with a consumer is its own state), so the drop is replicated as an
 * ack of that id, submitted before the PUBLISH that made room for itself, and a dead-letter goes through rule R8;
 * followers drop exactly what the leader dropped (docs/replication.md, rule R9). The leader acknowledges the
 * message in its store only when it applies that entry, as every node does: until then the drop is held
 * ({@link LeaderHold}), off the backlog and out of dispatch, and if the entry is not committed it is given back
 * ({@link BrokerQueue#dropNotCommitted}, {@link BrokerQueue#leadershipLost}), so a drop the leader could not commit
 * leaves its store as the others'.
 *
 * <p>Threads: the queue's executor.
 */
final class DropOldest {
    private static final Logger LOG = LoggerFactory.getLogger(DropOldest.class);

    /** Where a dropped message goes when the queue dead-letters what it drops; counted as dropped once its copy is durable. */
    interface DeadLetter {
        void deadLetterDropped(StoredMessage message, String reason);
    }

    private final BrokerQueue queue;
    private final QueueStore store;
    private final IdSet tracked;
    private final QueueTransactions transactions;
    private final Backlog backlog;
    private final QueueManager manager;
    private final DeadLetter deadLetter;
    private final DeliveryOrder order;
    private final LeaderHold hold;
    /** For one walk: the test of a message out with a consumer (in a consumer's in-flight deliveries). */
    private final java.util.function.Supplier<LongPredicate> outWithAConsumer;
    private long dropped;

    DropOldest(BrokerQueue queue, QueueStore store, IdSet tracked, QueueTransactions transactions, Backlog backlog,
               QueueManager manager, DeadLetter deadLetter, DeliveryOrder order, LeaderHold hold,
               java.util.function.Supplier<LongPredicate> outWithAConsumer) {
        this.queue = queue;
        this.store = store;
        this.tracked = tracked;
        this.transactions = transactions;
        this.backlog = backlog;
        this.manager = manager;
        this.deadLetter = deadLetter;
        this.order = order;
        this.hold = hold;
        this.outWithAConsumer = outWithAConsumer;
    }

    /**
     * Discards the oldest unacknowledged message not out with a consumer; false if there is none. Passed too: a
     * delivery a transaction holds (T1), a message being dead-lettered, a transaction's pending one, and one a cluster
     * leader holds (an earlier drop or a purge not applied yet), which are on their way out already or not the queue's
     * to drop. A tracked message that waits with no consumer (given back by a consumer that left, taken back by the ack
     * timeout, waiting out a NACK's delay or a dead-letter move's retry) is dropped like any other: passing every
     * tracked message would make a full queue whose messages had all been delivered once refuse every publish
     * with no consumer left. Every message skipped is tracked, pending or held, each at most once,
     * so the walk is bounded by those, not by the backlog.
     *
     * <p>A drop whose ack the store's ack state cannot write (its storage failed) is acknowledged in memory: it is a drop
     * all the same, counted and off the backlog, as the store's figures say ({@link AckBatch#ack}).
     */
    boolean dropOne() {
        if (queue.options().deadLetterDropped() && queue.deadLetterRefusing()) {
            return false; // a drop is a move to the dead-letter queue, which refuses them now: no room, the publish is refused
        }
        LongPredicate withAConsumer = outWithAConsumer.get();
        long id = store.oldestUnacked(x -> withAConsumer.test(x) || transactions.isHeld(x) || order.deadLettering(x)
                        || transactions.isPending(x) || hold.holds(x),
                (int) Math.min(Integer.MAX_VALUE, tracked.size() + transactions.pendingCount() + hold.size()));
        if (id < 0) {
            return false;
        }
        StoredMessage m;
        try {
            m = store.read(id);
        } catch (CorruptRecordException e) {
            dropped++;
            backlog.storeDiscarded(store.discardedMessageBytes()); // its bytes leave now, as a drop's do
            return true; // the store discarded the damaged record: room was made all the same
        }
        if (m == null) {
            return false;
        }
        if (tracked.contains(id)) { // waiting with no consumer: its timer or ready place goes with it
            tracked.remove(id);
            order.notDue(id);
        }
        Replication replication = manager.replication();
        if (queue.options().deadLetterDropped()) {
            // Room is made for this publish at once; the message leaves, and counts as dropped, once its copy is durable.
            deadLetter.deadLetterDropped(m, "dropped to make room: " + backlog.quotaReason());
        } else if (replication == null) {
            RuntimeException notWritten = AckBatch.ack(store, id);
            dropped++;
            backlog.removed(m.headersLength() + m.payloadLength());
            if (notWritten != null) {
                manager.messageLog().warn(LOG, "Queue '{}': message {} was dropped to make room, but its ack could not be"
                        + " written ({}); it is acknowledged in memory only, and a restart may bring it back.", queue.name(), id,
                        notWritten.toString());
            }
        } else {
            // Rule R9: the store drops it when the entry is applied here (counted then, so a drop given back never is);
            // until then it is held, off the backlog.
            hold.holdDrop(id, m.headersLength() + m.payloadLength());
            order.notDue(id);
            backlog.dropHeld(m.headersLength() + m.payloadLength());
            CompletableFuture<Void> applied;
            try {
                applied = replication.dropped(queue, id);
            } catch (RuntimeException e) {
                applied = CompletableFuture.failedFuture(e);
            }
            applied.whenComplete((done, failure) -> {
                if (failure != null) {
                    queue.dropNotCommitted(id);
                }
            });
        }
        return true;
    }

    /** Rule R9: {@code count} held drops were applied here, as on every node: they are dropped now. */
    void dropsApplied(int count) {
        dropped += count;
    }

    /** Messages dropped since the queue opened. */
    long dropped() {
        return dropped;
    }
}
