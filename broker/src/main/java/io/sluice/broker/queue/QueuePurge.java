package io.sluice.broker.queue;

import io.netty.util.concurrent.Promise;
import io.sluice.protocol.IdRange;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StorageFailedException;

import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongSupplier;

/** A purge of one queue (PURGE_QUEUE, the admin API), on the queue's executor. Stateless. */
final class QueuePurge {
    private QueuePurge() {
    }

    /**
     * A single broker's purge: acknowledges every stored message that is not out with a consumer, held by a
     * transaction, pending in one (T1, T2 of {@link QueueTransactions}), nor on its way to the dead-letter queue (its
     * move settles it: acknowledged once its copy is durable, or back in the queue if the move fails; purged, its copy
     * reached the dead-letter queue all the same), drops the redeliveries due, and sets the byte backlog to what is
     * left; returns how many were removed.
     *
     * <p>It never visits the messages it removes: it names the few it keeps, and the store acknowledges the ranges
     * between them ({@link QueueStore#ackAllExcept}). A backlog of millions so costs the queue's event loop, which
     * other queues and connections share, and the store's lock, which the flusher needs for every queue's group
     * commit, about what an empty queue costs, and no heap that grows with it.
     *
     * <p>A store whose ack state cannot be written acknowledges all of it in memory all the same and throws after
     * ({@link QueueStore#ackAllExcept}): the queue's figures are then set as after a purge that succeeded, so that they
     * match what the store keeps, and the failure is returned with the count for the caller to answer.
     */
    static Purged removeWaiting(QueueStore store, List<ConsumerSession> consumers, IdSet tracked, DeliveryOrder order,
                                QueueTransactions transactions, Backlog backlog) {
        IdSet kept = new IdSet(); // bounded by the consumers' credit, the transactions' limits and the moves under way
        for (ConsumerSession c : consumers) {
            for (long id : c.inFlight.ids()) {
                kept.add(id);
            }
        }
        transactions.forEachReserved(kept::add);
        order.forEachDeadLettering(kept::add);
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
        long unackedBefore = store.unackedMessages();
        long removed;
        StorageFailedException failure = null;
        try {
            removed = store.ackAllExcept(keep);
        } catch (UncheckedIOException e) {
            removed = unackedBefore - store.unackedMessages();
            failure = new StorageFailedException("the purge of queue '" + store.name() + "' removed " + removed
                    + " messages in memory only, and a restart may bring them back: " + e.getMessage(), e);
        }
        for (int i = 0; i < counts[0]; i++) {
            tracked.remove(untracked[i]);
        }
        order.clearDue();
        // What is left is out with the consumers, whose deliveries know their size, the transactions' or being moved.
        long left = transactions.reservedBytes() + order.deadLetteringBytes();
        for (ConsumerSession c : consumers) {
            left += c.inFlight.bytes();
        }
        backlog.resetBytes(left);
        return new Purged(removed, failure);
    }

    /** What {@link #removeWaiting} removed, and why its acks are in memory only, or null if they were written. */
    record Purged(long removed, StorageFailedException failure) {
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
     * what is already on its way out by an entry of its own (held by an earlier purge or a drop, acknowledged by a
     * consumer and not applied yet, being dead-lettered), and holds it in {@code hold} instead of acknowledging it: out of
     * the tracked set and the ready list, untouched in the store and the backlog until the entries are applied.
     *
     * <p>As {@link #removeWaiting}, it never visits the messages it picks: it names the few it keeps, and picks the ranges
     * between them, from the oldest unacknowledged message to the newest stored, less the ranges earlier purges hold. The
     * ranges are what its ACK entries name, so every node, and a node replaying the log, removes exactly those ids,
     * whatever it stored since; ids in them acknowledged already are acknowledged again, which changes nothing. Returns
     * the ranges, each starting at an unacknowledged message, and how many unacknowledged messages they hold.
     */
    static Held holdWaiting(QueueStore store, List<ConsumerSession> consumers, IdSet tracked, DeliveryOrder order,
                            QueueTransactions transactions, AckBatch acks, LeaderHold hold) {
        IdSet kept = new IdSet(); // bounded by credit, the transactions' limits and the log's bound on what is uncommitted
        for (ConsumerSession c : consumers) {
            for (long id : c.inFlight.ids()) {
                kept.add(id);
            }
        }
        transactions.forEachReserved(kept::add);
        acks.forEachAwaitingApply(kept::add);
        order.forEachDeadLettering(kept::add);
        hold.forEachDrop(kept::add);
        long[] keep = new long[kept.size()];
        int[] n = {0};
        kept.forEach(id -> keep[n[0]++] = id);
        Arrays.sort(keep);

        List<IdRange> gaps = new ArrayList<>();
        long first = store.nextUnacked(0);
        long last = store.writtenIndex();
        long from = first;
        for (int i = 0; first >= 0 && i <= keep.length; i++) {
            long to = i < keep.length ? keep[i] - 1 : last;
            if (to >= from) {
                hold.addNotPurged(from, Math.min(to, last), gaps);
            }
            if (i < keep.length) {
                from = Math.max(from, keep[i] + 1);
            }
        }
        List<IdRange> picked = new ArrayList<>();
        long count = 0;
        for (IdRange gap : gaps) {
            long start = store.nextUnacked(gap.from()); // a range starting at an acknowledged id would name it for nothing
            if (start >= 0 && start <= gap.to()) {
                picked.add(new IdRange(start, gap.to()));
                count += store.unackedCount(start, gap.to());
            }
        }
        // The tracked messages it picks (due again, or waiting out a delay): out of the ready list and their delays (D7), so
        // that no timer makes them due, held or given back.
        long[] untracked = new long[tracked.size()];
        n[0] = 0;
        tracked.forEach(id -> {
            if (inRanges(picked, id)) {
                untracked[n[0]++] = id;
            }
        });
        for (int i = 0; i < n[0]; i++) {
            tracked.remove(untracked[i]);
            order.notDue(untracked[i]);
        }
        hold.hold(picked);
        return new Held(picked, count);
    }

    /** What a cluster leader's purge holds: the ranges its entries name, and how many unacknowledged messages they hold. */
    record Held(List<IdRange> ranges, long count) {
    }

    /** True if {@code id} is in one of {@code ranges}, ascending and disjoint. */
    private static boolean inRanges(List<IdRange> ranges, long id) {
        int lo = 0;
        int hi = ranges.size() - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            IdRange range = ranges.get(mid);
            if (id < range.from()) {
                hi = mid - 1;
            } else if (id > range.to()) {
                lo = mid + 1;
            } else {
                return true;
            }
        }
        return false;
    }
}
