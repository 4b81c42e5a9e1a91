package io.sluice.broker.queue;

import io.sluice.broker.log.RateLimitedLog;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackFrame;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StorageFailedException;
import io.sluice.storage.StoredMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.function.LongConsumer;
import java.util.function.LongFunction;
import java.util.function.Supplier;

/**
 * What a queue's consumers settle: their ACK frames, late acks among them (D5), and their NACK frames, each applied in
 * one task on the queue's executor.
 *
 * <p>Rule "a frame is applied whole": every id a frame names ends somewhere defined, whatever the store does with one of
 * them. A late ack and a rejection to the dead-letter queue read their message by id (its bytes leave the backlog; its
 * copy is moved); a read that fails otherwise than on a damaged record (the store failed) is that message's outcome
 * alone. A late ack of it is not applied: it stays due, still its consumer's to ack late, and goes out again (at least
 * once, as after a lost ack). A rejection of it is a failed move: it is delivered again after the longest redelivery
 * delay ({@link DeadLetterMoves#unreadable}). The frame's other ids are applied, stored and counted, and the consumer's
 * settled deliveries go back to its connection's credit. Before (found by a review), the failure left the frame's loop:
 * the ids after it were out of the consumer's hands and in no ready list, until a restart, and an ACK frame's acks
 * before it were neither stored nor counted, nor its deliveries settled. The consumer's connection is told, with one
 * ERROR STORAGE_FAILED for the frame ({@link UnreadSettlements}), so that its application does not take for settled
 * what will come again.
 *
 * <p>Threads: the queue's executor.
 */
final class Settlements {
    private static final Logger LOG = LoggerFactory.getLogger(Settlements.class);

    private final BrokerQueue queue;
    private final QueueStore store;
    private final QueueManager manager;
    private final IdSet tracked;
    private final DeliveryOrder order;
    private final AckBatch acks;
    private final QueueTransactions transactions;
    private final DeadLetterMoves deadLetters;
    /** Reads a message by id, null if it is acknowledged or damaged; throws if the store failed. */
    private final LongFunction<StoredMessage> read;
    /** Counts acknowledged messages: the queue counts them, feeds the slowed producers, re-evaluates its quota, dispatches. */
    private final LongConsumer acknowledged;
    private final Runnable dispatch;
    private final Supplier<QueueOptions> options;
    private final RateLimitedLog log;
    /** Set by the metrics (a no-op without them); called on the executor, once per ACK frame. */
    private volatile LongConsumer ackLatencyMillis = value -> { };
    private long nacked;
    /** The late acks of the frame being applied whose message could not be read; null if none. */
    private UnreadSettlements lateAcksUnread;
    /** The replicated acks of the entry being applied whose message could not be read; null if none. */
    private UnreadSettlements logAcksUnread;
    /** The rejections to the dead-letter queue of the frame being applied whose message could not be read; null if none. */
    private UnreadSettlements notRejected;

    Settlements(BrokerQueue queue, QueueStore store, QueueManager manager, IdSet tracked, DeliveryOrder order, AckBatch acks,
                QueueTransactions transactions, DeadLetterMoves deadLetters, LongFunction<StoredMessage> read,
                LongConsumer acknowledged, Runnable dispatch) {
        this.queue = queue;
        this.store = store;
        this.manager = manager;
        this.tracked = tracked;
        this.order = order;
        this.acks = acks;
        this.transactions = transactions;
        this.deadLetters = deadLetters;
        this.read = read;
        this.acknowledged = acknowledged;
        this.dispatch = dispatch;
        this.options = queue::options;
        this.log = manager.messageLog();
    }

    /** Acknowledges the ids of the frame's ranges that are outstanding on this session, or were taken back from it (D5). */
    void ack(ConsumerSession session, AckFrame frame) {
        Replication replication = manager.replication();
        acks.begin(replication != null);
        long acked = 0;
        long settled = 0;
        UnknownRanges unknown = null; // made only for a frame naming something not outstanding
        for (IdRange range : frame.messageIds()) {
            int fromConsumer = session.inFlight.removeRange(range.from(), range.to(), acks);
            settled += fromConsumer;
            // A late ack finds the message already taken back, its credit unit returned to the consumer.
            int late = order.lateAcks(range.from(), range.to(), session, this::lateAck);
            acked += fromConsumer + late;
            if (fromConsumer + late == 0) {
                unknown = UnknownRanges.add(unknown, "ack", queue.name(), range);
            }
        }
        acked -= lateAcksNotApplied(session);
        UnknownRanges.report(unknown, session);
        session.account.settle(settled);
        acks.flush();
        if (acks.unwritten() != null) {
            inMemoryOnly(session, acked, acks.unwritten());
        }
        if (acks.oldestAppendedMillis() != Long.MAX_VALUE) { // one sample per ACK frame: its oldest message
            ackLatencyMillis.accept(Math.max(0, store.nowMillis() - acks.oldestAppendedMillis()));
        }
        List<IdRange> replicated = acks.replicatedRanges();
        if (replicated != null) {
            replication.acked(queue, replicated);
        }
        if (acked > 0) {
            acknowledged.accept(acked);
        }
    }

    /**
     * The store acknowledged the frame's {@code acked} messages in memory only: its ack state cannot be written (its
     * storage failed, docs/storage.md). They are settled here, but a restart may deliver them again, which the consumer is
     * told, as a purge is answered: one ERROR STORAGE_FAILED for the frame.
     */
    private void inMemoryOnly(ConsumerSession session, long acked, RuntimeException failure) {
        String why = failure.getMessage() != null ? failure.getMessage() : failure.getClass().getSimpleName();
        session.connection.error(ErrorCode.STORAGE_FAILED, "ack of " + (acked == 1 ? "1 message" : acked + " messages")
                + " on consumer " + session.tag + " of queue '" + queue.name() + "' is applied in memory only: the queue's"
                + " storage failed to write its ack state (" + why + "); a restart may deliver "
                + (acked == 1 ? "it" : "them") + " again");
        session.connection.flush();
    }

    /**
     * A consumer's late ack of a message taken back after its ack timeout and not yet redelivered: it counts, batched
     * for the store with the others of its frame. One whose message cannot be read is kept for
     * {@link #lateAcksNotApplied}, which makes it due again once the frame's walk of the ready list is over.
     */
    private void lateAck(long id) {
        readAndAccept(id, false);
    }

    /**
     * Reads message {@code id} and applies its ack ({@link #accepted}); true if so. False if the read failed (the store
     * failed): nothing of it is applied, and it is kept for the end of the frame ({@link #lateAcksNotApplied}) or, if
     * {@code replicated}, of the entry ({@link #logAcksApplied}).
     */
    private boolean readAndAccept(long id, boolean replicated) {
        StoredMessage m;
        try {
            m = read.apply(id);
        } catch (RuntimeException e) {
            if (replicated) {
                logAcksUnread = UnreadSettlements.add(logAcksUnread, "replicated ack", id, e);
            } else {
                lateAcksUnread = UnreadSettlements.add(lateAcksUnread, "ack", id, e);
            }
            return false;
        }
        accepted(id, m);
        return true;
    }

    /**
     * The late acks of this frame that could not be applied: each due again, still {@code session}'s to ack late, and the
     * consumer told. Returns how many.
     */
    private int lateAcksNotApplied(ConsumerSession session) {
        if (lateAcksUnread == null) {
            return 0;
        }
        UnreadSettlements unread = lateAcksUnread;
        lateAcksUnread = null;
        List<Long> ids = unread.ids();
        for (int i = ids.size() - 1; i >= 0; i--) {
            order.stillTakenBack(ids.get(i), session);
        }
        log.warn(LOG, "Queue '{}': {} late acks of {} (the first of message {}) could not be applied: reading the message"
                + " failed ({}); they are delivered again.", queue.name(), ids.size(), session.connection.describe(), ids.get(0),
                unread.cause().toString());
        unread.report(session, queue.name(), ids.size() == 1 ? "it stays in the queue and is delivered again"
                : "they stay in the queue and are delivered again");
        dispatch.run();
        return ids.size();
    }

    /**
     * A cluster node applies a replicated ack of a message it does not hold out with a consumer (docs/replication.md):
     * counted as a late ack is. True if applied; false if the message could not be read (the store failed): it is left
     * as it was, not made due again (the log has acknowledged it), and {@link #logAcksApplied} reports it once the
     * entry's other acks are applied.
     */
    boolean ackedByLog(long id) {
        return readAndAccept(id, true);
    }

    /**
     * After a replicated entry's acks were applied ({@link AckBatch#applyReplicated}): throws if some could not be, their
     * message unreadable, naming the first and why. On a cluster node this stops it applying the log (rule R2 of
     * docs/replication.md, {@link ApplyHalt}): every other node acknowledged those messages, and one that skipped them
     * would keep what the others do not; started again, it applies the entry again from its last snapshot marker.
     */
    void logAcksApplied() {
        if (logAcksUnread == null) {
            return;
        }
        List<Long> ids = logAcksUnread.ids();
        RuntimeException cause = logAcksUnread.cause();
        logAcksUnread = null;
        throw new StorageFailedException("the replicated acks of " + ids.size() + " messages of queue '" + queue.name()
                + "' could not be applied (the first: message " + ids.get(0) + "), reading the message failed (" + cause
                + "); the entry's other acks were applied", cause);
    }

    /** {@code m}: message {@code id}, read; null if it is gone (acknowledged, or its record damaged). */
    private void accepted(long id, StoredMessage m) {
        order.delayEnded(id); // a replicated ack may find it waiting out a requeue delay (D7)
        if (m != null) {
            // Rule R13: a committed transaction's entry acknowledges what that transaction held here (T1), as on every node.
            transactions.ackedByLog(id, m.headersLength() + m.payloadLength());
            acks.accept(id, m.headersLength() + m.payloadLength(), m.timestampMillis());
        } else {
            tracked.remove(id);
        }
    }

    /** Takes the frame's ids outstanding on this session off it, and requeues or dead-letters each as the frame says. */
    void nack(ConsumerSession session, NackFrame frame) {
        LongConsumer outcome = switch (frame.action()) {
            case REJECT_TO_DEAD_LETTER -> this::reject;
            case REQUEUE -> id -> order.dueAfter(id, options.get().redeliveryDelayMs(store.deliveryCount(id)));
            // Capped as the queue's own redelivery delays are: each waiting message holds a timer on the
            // queue's event loop, and a client's 30 days would hold it for good.
            case REQUEUE_AFTER_DELAY -> {
                long delayMs = Math.min(Math.max(0, frame.delayMs()), options.get().maxRedeliveryDelayMs());
                yield id -> order.dueAfter(id, delayMs);
            }
        };
        UnknownRanges unknown = null;
        long nackedBefore = nacked;
        for (IdRange range : frame.messageIds()) {
            List<Long> ids = new ArrayList<>();
            session.inFlight.removeRange(range.from(), range.to(), (id, bytes, appendedAtMillis) -> ids.add(id));
            if (ids.isEmpty()) {
                unknown = UnknownRanges.add(unknown, "nack", queue.name(), range);
                continue;
            }
            nacked += ids.size();
            session.account.settle(ids.size());
            for (long id : ids) {
                outcome.accept(id);
            }
        }
        UnknownRanges.report(unknown, session);
        if (notRejected != null) {
            UnreadSettlements unread = notRejected;
            notRejected = null;
            unread.report(session, queue.name(), (unread.ids().size() == 1 ? "it stays" : "they stay")
                    + " in the queue and " + (unread.ids().size() == 1 ? "is" : "are") + " delivered again in "
                    + options.get().maxRedeliveryDelayMs() + " ms");
        }
        if (nackedBefore != nacked) { // a NACK of nothing outstanding makes nothing due: no pass for it
            dispatch.run();
        }
    }

    /**
     * REJECT_TO_DEAD_LETTER of one delivery: moved to the dead-letter queue. One that cannot be read (the store failed) is
     * a failed move, its own alone: the frame's others are moved (rule "a frame is applied whole").
     */
    private void reject(long id) {
        StoredMessage m;
        try {
            m = read.apply(id);
        } catch (RuntimeException e) {
            deadLetters.unreadable(id, e);
            notRejected = UnreadSettlements.add(notRejected, "nack to the dead-letter queue", id, e);
            return;
        }
        if (m != null) {
            deadLetters.start(m, m.deliveryCount(), "rejected by the consumer");
        } else {
            tracked.remove(id);
        }
    }


    /** Messages NACKed since the queue opened. */
    long nacked() {
        return nacked;
    }

    /** Where the publish-to-ack latency goes (store-clock milliseconds, one sample per ACK frame, for its oldest message). */
    void recordAckLatency(LongConsumer ackMillis) {
        this.ackLatencyMillis = ackMillis;
    }
}
