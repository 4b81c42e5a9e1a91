package io.sluice.broker.queue;

import io.netty.util.concurrent.Promise;
import io.sluice.protocol.IdRange;
import io.sluice.storage.QueueStore;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongConsumer;
import java.util.function.LongPredicate;
import java.util.function.LongSupplier;

/** A purge of one queue (PURGE_QUEUE, the admin API), on the queue's executor. Stateless. */
final class QueuePurge {
    private QueuePurge() {
    }

    /**
     * A single broker's purge: acknowledges every stored message that is not out with a consumer, held by a
     * transaction, nor pending in one (T1, T2 of {@link QueueTransactions}), drops the redeliveries due, and sets the
     * byte backlog to what is left; returns how many were removed.
     *
     * <p>It never visits the messages it removes: it names the few it keeps, and the store acknowledges the ranges
     * between them ({@link QueueStore#ackAllExcept}). A backlog of millions so costs the queue's event loop, which
     * other queues and connections share, and the store's lock, which the flusher needs for every queue's group
     * commit, about what an empty queue costs, and no heap that grows with it.
     */
    static long removeWaiting(QueueStore store, List<ConsumerSession> consumers, IdSet tracked, DeliveryOrder order,
                              QueueTransactions transactions, Backlog backlog) {
        IdSet kept = new IdSet(); // bounded by the consumers' credit and the transactions' limits
        for (ConsumerSession c : consumers) {
            for (long id : c.inFlight.ids()) {
                kept.add(id);
            }
        }
        transactions.forEachReserved(kept::add);
        // The tracked messages it removes (waiting for a redelivery, or due): known before the store forgets them.
        long[] untracked = new long[tracked.size()];
        int[] counts = {0, 0};
        tracked.forEach(id -> {
            if (!kept.contains(id) && !store.isAcked(id)) {
                untracked[counts[0]++] = id;
            }
        });
        long[] keep = new long[kept.size()];
        kept.forEach(id -> keep[counts[1]++] = id);
        Arrays.sort(keep);
        long removed = store.ackAllExcept(keep);
        for (int i = 0; i < counts[0]; i++) {
            tracked.remove(untracked[i]);
        }
        order.clearDue();
        // What is left is out with the consumers, whose deliveries know their size, or the transactions'.
        long left = transactions.reservedBytes();
        for (ConsumerSession c : consumers) {
            left += c.inFlight.bytes();
        }
        backlog.resetBytes(left);
        return removed;
    }

    /**
     * Runs {@code purge} and completes {@code answer} with what it removed once its acks are on disk (an early force
     * of the ack journal, shared with whoever else asks meanwhile), or with the failure: a purge answered done stays
     * done after a machine crash too, where acks not yet forced are lost and their messages would come back.
     */
    static void answerWhenDurable(QueueStore store, LongSupplier purge, Promise<Long> answer) {
        long removed;
        try {
            removed = purge.getAsLong();
        } catch (RuntimeException e) {
            answer.tryFailure(e);
            return;
        }
        store.whenAcksDurable(true).whenComplete((durable, failed) -> {
            if (failed == null) {
                answer.trySuccess(removed);
            } else {
                answer.tryFailure(failed);
            }
        });
    }

    /**
     * A cluster leader's purge (rule R7 of docs/replication.md): picks what {@link #removeWaiting} would remove, except
     * what is already on its way out by an entry of its own ({@code leaving}: held by an earlier purge or a drop,
     * acknowledged by a consumer and not applied yet, being dead-lettered), and holds it in {@code hold} instead of
     * acknowledging it: out of the tracked set and the ready list, untouched in the store and the backlog until the entries are applied.
     * Returns the ids picked as ranges of consecutive ids, for the ACK entries.
     */
    static List<IdRange> holdWaiting(QueueStore store, List<ConsumerSession> consumers, IdSet tracked, DeliveryOrder order,
                                     QueueTransactions transactions, LongPredicate leaving, LeaderHold hold) {
        List<IdRange> picked = new ArrayList<>();
        forEachWaiting(store, consumers, transactions, leaving, id -> {
            tracked.remove(id); // so that a requeue's timer does not make it due while held
            order.notDue(id);
            hold.hold(id);
            int last = picked.size() - 1;
            if (last >= 0 && picked.get(last).to() == id - 1) {
                picked.set(last, new IdRange(picked.get(last).from(), id));
            } else {
                picked.add(new IdRange(id, id));
            }
        });
        return picked;
    }

    /** Hands {@code action} each stored message, in id order, that is neither out with a consumer, a transaction's, nor {@code skip}ped; returns how many. */
    private static long forEachWaiting(QueueStore store, List<ConsumerSession> consumers, QueueTransactions transactions,
                                       LongPredicate skip, LongConsumer action) {
        IdSet outstanding = new IdSet(); // bounded by the consumers' credit
        for (ConsumerSession c : consumers) {
            for (long id : c.inFlight.ids()) {
                outstanding.add(id);
            }
        }
        long[] count = new long[1];
        // The store hands the ids over once it has let go of its lock, so the action may acknowledge them.
        store.forEachUnacked(id -> {
            if (!outstanding.contains(id) && !transactions.isHeld(id) && !transactions.isPending(id) && !skip.test(id)) {
                action.accept(id);
                count[0]++;
            }
        });
        return count[0];
    }
}
