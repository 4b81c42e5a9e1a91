package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import io.sluice.storage.QueueStore;

import java.util.ArrayList;
import java.util.List;
import java.util.function.LongConsumer;
import java.util.function.LongPredicate;

/** A purge of one queue (PURGE_QUEUE, the admin API), on the queue's executor. Stateless. */
final class QueuePurge {
    private QueuePurge() {
    }

    /**
     * A single broker's purge: acknowledges every stored message that is not out with a consumer, held by a
     * transaction, nor pending in one (T1, T2 of {@link QueueTransactions}), drops the redeliveries due, and sets the
     * byte backlog to what is left; returns how many were removed.
     */
    static long removeWaiting(QueueStore store, List<ConsumerSession> consumers, IdSet tracked, DeliveryOrder order,
                              QueueTransactions transactions, Backlog backlog) {
        // Acknowledged by runs of consecutive ids (one call a run, not one a message: a backlog is mostly one run).
        long[] run = {-1, -1};
        long removed = forEachWaiting(store, consumers, transactions, id -> false, id -> {
            tracked.remove(id);
            if (run[1] >= 0 && id == run[1] + 1) {
                run[1] = id;
            } else {
                if (run[1] >= 0) {
                    store.ackRange(run[0], run[1]);
                }
                run[0] = id;
                run[1] = id;
            }
        });
        if (run[1] >= 0) {
            store.ackRange(run[0], run[1]);
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
