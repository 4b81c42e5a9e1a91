package io.sluice.broker.queue;

import io.sluice.broker.error.ErrorCodes;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoredMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongConsumer;

/**
 * The deliveries a queue's transactions hold (T1 of {@link QueueTransactions}): taken off their consumer at TX_ACK, kept
 * unacknowledged and tracked until their transaction ends, then acknowledged (commit) or made due again (rollback). Owns
 * the set of held ids and their bytes; {@link QueueTransactions} tells the queue what changed.
 *
 * <p>Threads: the queue's executor, but for those that say otherwise.
 */
final class HeldDeliveries {
    private static final Logger LOG = LoggerFactory.getLogger(HeldDeliveries.class);

    private final BrokerQueue queue;
    private final QueueStore store;
    private final Backlog backlog;
    private final IdSet tracked;
    private final DeliveryOrder order;
    /** Ids held by transactions; their bytes are in the {@link HeldAcks} that holds them. */
    private final IdSet held = new IdSet();
    private long heldBytes;

    HeldDeliveries(BrokerQueue queue, QueueStore store, Backlog backlog, IdSet tracked, DeliveryOrder order) {
        this.queue = queue;
        this.store = store;
        this.backlog = backlog;
        this.tracked = tracked;
        this.order = order;
    }

    /**
     * TX_ACK: takes the deliveries of {@code ranges} that are out with {@code session} (null if it left) off it and
     * holds them. A range with none outstanding is the held set's {@link HeldAcks#problem()}.
     *
     * <p>Rule "a late TX_ACK is a late ACK" (D5 of the queue): a delivery the ack timeout took back from this consumer
     * and not yet sent again is still the consumer's to acknowledge, and is held as one out with it is; its credit unit
     * went back at the timeout, so it settles nothing. Holding only the deliveries out with the consumer would roll such a
     * TX_ACK's whole transaction back where a plain ACK of the same ids counts.
     * One already sent again to another consumer is that consumer's: still a problem, which the sentence names.
     *
     * <p>Rule "a frame is applied whole" (of {@link Settlements}): such a delivery whose message the store cannot read is
     * not held but stays due, still the consumer's to ack late, and the held set's problem says so, which rolls the
     * transaction back; the others are held, and settled. Before, the failure failed the whole TX_ACK: what it had held
     * stayed held, with no transaction to release it, until a restart, and its deliveries were never settled.
     */
    HeldAcks hold(ConsumerSession session, List<IdRange> ranges) {
        HeldAcks taken = new HeldAcks(queue);
        if (session == null || session.closed) {
            taken.problem("the consumer left queue '" + queue.name() + "' before the acknowledgement reached it");
            return taken;
        }
        int settled = 0;
        List<Long> unreadable = new ArrayList<>(0);
        for (IdRange range : ranges) {
            int fromConsumer = session.inFlight.removeRange(range.from(), range.to(),
                    (id, bytes, appendedAtMillis) -> hold(taken, id, bytes));
            settled += fromConsumer;
            int takenBack = order.lateAcks(range.from(), range.to(), session, id -> holdTakenBack(taken, id, unreadable));
            if (fromConsumer + takenBack == 0) {
                taken.problem("message ids " + range.from() + ".." + range.to() + " are not outstanding on consumer "
                        + session.tag + " of queue '" + queue.name() + "' (never delivered to it, already settled, or "
                        + "taken back after the ack timeout and delivered again since)");
            }
        }
        for (int i = unreadable.size() - 1; i >= 0; i--) {
            order.stillTakenBack(unreadable.get(i), session);
        }
        session.account.settle(settled);
        return taken;
    }

    private void hold(HeldAcks taken, long id, int bytes) {
        taken.add(id, bytes);
        held.add(id);
        heldBytes += bytes;
    }

    /** A delivery taken back by the ack timeout, held by a late TX_ACK; one whose record is damaged is no longer tracked, as a late ACK's. */
    private void holdTakenBack(HeldAcks taken, long id, List<Long> unreadable) {
        StoredMessage m;
        try {
            m = queue.readUnlessDamaged(id);
        } catch (RuntimeException e) {
            if (unreadable.isEmpty()) { // one line per TX_ACK, however many it names
                LOG.warn("Queue '{}': message {}, acknowledged late in a transaction, could not be read; the transaction is"
                        + " rolled back.", queue.name(), id, e);
                ErrorCode code = ErrorCodes.of(e);
                taken.problem(code, "message " + id + " of queue '" + queue.name() + "' could not be read ("
                        + (code == ErrorCode.INTERNAL_ERROR ? "see the broker log" : e.getMessage()) + "); it stays in the queue");
            }
            unreadable.add(id);
            return;
        }
        if (m != null) {
            hold(taken, id, m.headersLength() + m.payloadLength());
        } else {
            tracked.remove(id);
        }
    }

    /**
     * A cluster node applies a replicated acknowledgement of {@code id} (rule R13 of docs/replication.md: a committed
     * transaction's entry, on the leader whose transaction held it): no longer held; the caller acknowledges it. On the
     * executor.
     */
    void ackedByLog(long id, int bytes) {
        if (held.size() > 0 && held.contains(id)) {
            held.remove(id);
            heldBytes -= bytes;
        }
    }

    /**
     * Rollback: what {@code acks} holds goes back to the front of the queue, in id order; its next delivery counts one
     * more. Returns how many were made due again.
     */
    int release(HeldAcks acks) {
        for (int i = 0; i < acks.count(); i++) {
            if (held.contains(acks.id(i))) {
                heldBytes -= acks.bytes(i);
            }
        }
        long[] ids = acks.ids();
        Arrays.sort(ids);
        int count = 0;
        for (int i = ids.length - 1; i >= 0; i--) {
            if (held.contains(ids[i])) {
                held.remove(ids[i]);
                order.dueFirst(ids[i]);
                count++;
            }
        }
        return count;
    }

    /** Commit: the held deliveries of {@code list} are acknowledged in the store and leave the backlog. Returns how many. */
    int acknowledge(List<HeldAcks> list) {
        int total = 0;
        for (HeldAcks acks : list) {
            total += acks.count();
        }
        if (total == 0) {
            return 0;
        }
        long[] ids = new long[total];
        int count = 0;
        for (HeldAcks acks : list) {
            for (int i = 0; i < acks.count(); i++) {
                long id = acks.id(i);
                if (held.contains(id)) {
                    held.remove(id);
                    ids[count++] = id;
                    heldBytes -= acks.bytes(i);
                    backlog.removed(acks.bytes(i));
                    tracked.remove(id);
                }
            }
        }
        if (count > 0) {
            AckBatch.ackAll(store, ids, count); // one store lock per queue and commit
        }
        return count;
    }

    boolean contains(long id) {
        return held.contains(id);
    }

    /** Bytes of the deliveries held. */
    long bytes() {
        return heldBytes;
    }

    void forEach(LongConsumer action) {
        held.forEach(action);
    }
}
