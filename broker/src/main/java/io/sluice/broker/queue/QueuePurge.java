package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import io.sluice.storage.QueueStore;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/** A purge of one queue (PURGE_QUEUE, the admin API), on the queue's executor. Stateless. */
final class QueuePurge {
    private QueuePurge() {
    }

    /**
     * Acknowledges every stored message that is not out with a consumer, held by a transaction, nor
     * pending in one (T1, T2 of {@link QueueTransactions}), drops the redeliveries due, and sets the byte backlog to what
     * is left; returns how many were removed. {@code removedIds}, if not null, gets their ids as ranges of
     * consecutive ids (a cluster replicates them, rule R7 of docs/replication.md).
     */
    static long removeWaiting(QueueStore store, List<ConsumerSession> consumers, IdSet tracked, DeliveryOrder order,
                              QueueTransactions transactions, Backlog backlog, List<IdRange> removedIds) {
        List<Long> ids = new ArrayList<>();
        store.forEachUnacked(ids::add);
        Set<Long> outstanding = new HashSet<>();
        for (ConsumerSession c : consumers) {
            for (long id : c.inFlight.ids()) {
                outstanding.add(id);
            }
        }
        long removed = 0;
        for (long id : ids) {
            if (!outstanding.contains(id) && !transactions.isHeld(id) && !transactions.isPending(id)) {
                store.ack(id);
                tracked.remove(id);
                removed++;
                if (removedIds != null) {
                    int last = removedIds.size() - 1;
                    if (last >= 0 && removedIds.get(last).to() == id - 1) {
                        removedIds.set(last, new IdRange(removedIds.get(last).from(), id));
                    } else {
                        removedIds.add(new IdRange(id, id));
                    }
                }
            }
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
}
