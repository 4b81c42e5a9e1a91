package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import io.sluice.storage.AckNotWrittenException;
import io.sluice.storage.AckedRange;
import io.sluice.storage.QueueStore;

import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.LongConsumer;
import java.util.function.LongPredicate;

/**
 * The acknowledged deliveries of one ACK frame (or of one replicated ack entry), as they are found:
 * each taken off the backlog and the tracked set at once, batched for the store, which takes them
 * with one lock per batch rather than one per message. On a cluster node it also collects the ids
 * as ranges for the shard's log (docs/replication.md). Confined to the queue's executor.
 */
public final class AckBatch implements InFlightDeliveries.Removed {
    /** The one key under which {@link #replicated} collects ids (it groups ranges by producer id). */
    private static final long RANGES_KEY = 0;

    private final QueueStore store;
    private final Backlog backlog;
    private final IdSet tracked;
    /**
     * The ids batched for the store: 16 at first, doubled when full up to {@value #MAX_BATCH}, then
     * flushed. Most queues never ack more than a few ids per frame; at the full size from the start,
     * this array alone was 8 KB of heap per queue (8 MB at 1,000 queues).
     */
    private long[] ids = new long[16];
    private static final int MAX_BATCH = 1024;
    /** A replicated range at most this much longer than what this node tracks is applied one id after the other. */
    private static final int STEPPED_RANGE = 64;
    private int size;
    /** The oldest store timestamp among the messages acknowledged since {@link #begin}. */
    private long oldestAppendedMillis = Long.MAX_VALUE;
    private PendingConfirms.StoredRanges replicated;
    /**
     * Why the store could not write the acks handed to it since {@link #begin} (its ack state failed: they are
     * acknowledged in memory only, and a restart may bring them back), or null: the consumer is told.
     */
    private RuntimeException unwritten;
    /**
     * Rule R5 of docs/replication.md, on a cluster leader: ids a consumer acknowledged here whose ACK entry this
     * node has not applied yet. They are off the backlog and their consumer's books at once, but stay tracked
     * (nothing delivers or purges them again) and unacknowledged in the store until the entry is applied, as on
     * every other node; if this node stops leading first, {@link #unapplied} gives them back, with the bytes each took
     * off the backlog.
     */
    private final IdBytes awaitingApply = new IdBytes();

    AckBatch(QueueStore store, Backlog backlog, IdSet tracked) {
        this.store = store;
        this.backlog = backlog;
        this.tracked = tracked;
    }

    /** A new frame's acks; {@code replicate}: collect their ids for {@link #replicatedRanges}. */
    void begin(boolean replicate) {
        oldestAppendedMillis = Long.MAX_VALUE;
        unwritten = null;
        replicated = replicate ? new PendingConfirms.StoredRanges() : null;
    }

    /** One acknowledged delivery. */
    @Override
    public void accept(long id, int bytes, long appendedAtMillis) {
        backlog.removed(bytes);
        oldestAppendedMillis = Math.min(oldestAppendedMillis, appendedAtMillis);
        if (replicated != null) {
            replicated.stored(RANGES_KEY, id);
            awaitingApply.add(id, bytes); // stored when its entry is applied here (R5)
            return;
        }
        batch(id);
        tracked.remove(id);
    }

    private void batch(long id) {
        if (size == ids.length) {
            if (ids.length < MAX_BATCH) {
                ids = Arrays.copyOf(ids, 2 * ids.length);
            } else {
                storeBatch();
            }
        }
        ids[size++] = id;
    }

    /**
     * A cluster node's replicated acks (docs/replication.md): each message of {@code ranges} neither acked
     * here nor this node's to settle ({@code settledHere}: out with a consumer of this node, or being moved to its
     * dead-letter queue) is acknowledged through {@code lateAck}
     * (which reads its size and hands it back here), a tracked one too: one due again, or waiting out a requeue
     * delay, here (a leader deposed while its consumers held it gave it back to its ready list) is acknowledged as
     * on every other node, and passed over when its turn comes. One out with a consumer is settled by that consumer
     * (an at-least-once redelivery at worst). Returns how many were acknowledged; the batch is flushed.
     *
     * <p>{@code lateAck} answers false for a message it could not read (the store failed): that one is left as it was,
     * unacknowledged here, and the others are applied all the same, so that what this node did apply is counted and off
     * its backlog; the caller reports the failure ({@link Settlements#logAcksApplied}).
     *
     * <p>A range longer than what this node tracks (a purge's, rule R7) is applied without a step per message
     * ({@link #applyRange}); a short one (a consumer's acks) one id after the other, as that costs less.
     */
    long applyReplicated(List<IdRange> ranges, LongPredicate lateAck, LongPredicate settledHere) {
        long acked = 0;
        for (IdRange range : ranges) {
            if (range.to() - range.from() >= STEPPED_RANGE + tracked.size() + awaitingApply.size()) {
                acked += applyRange(range, lateAck, settledHere);
                continue;
            }
            for (long id = range.from(); id <= range.to(); id++) {
                if (awaitingApply.size() > 0 && awaitingApply.contains(id)) {
                    awaitingApply.remove(id); // settled here already (R5): only the store's ack was waiting for this entry
                    tracked.remove(id);
                    batch(id);
                } else if (!store.isAcked(id) && (!tracked.contains(id) || !settledHere.test(id)) && lateAck.test(id)) {
                    acked++;
                }
            }
        }
        flush();
        return acked;
    }

    /**
     * One long range of {@link #applyReplicated}, with its outcome: what this node tracks in it (bounded by credit and
     * the log's bound on what is uncommitted) one by one as above, then the rest, which no one here tracks, in one call
     * to the store ({@link QueueStore#ackRangeExcept}), which says how many it acknowledged and their bytes, so the
     * backlog loses them without a read of each. A tracked one {@code lateAck} could not read is kept out of that call,
     * left as it was, as in a short range. A store whose ack state cannot be written acknowledges the range in memory and
     * throws what that took ({@link AckNotWrittenException}): an ack, as {@link #ackAll} takes a batch's, so the backlog
     * and the count follow what the store holds.
     */
    private long applyRange(IdRange range, LongPredicate lateAck, LongPredicate settledHere) {
        for (long id : idsIn(awaitingApply.size(), awaitingApply::forEach, range)) {
            awaitingApply.remove(id);
            tracked.remove(id);
            batch(id);
        }
        long[] trackedIn = idsIn(tracked.size(), tracked::forEach, range);
        long[] keep = new long[trackedIn.length];
        int kept = 0;
        long acked = 0;
        for (long id : trackedIn) {
            if (store.isAcked(id)) {
                continue;
            }
            if (settledHere.test(id) || !lateAck.test(id)) {
                keep[kept++] = id;
            } else {
                acked++;
            }
        }
        flush(); // those before the range's acks, which then count only the others
        long[] sorted = Arrays.copyOf(keep, kept);
        Arrays.sort(sorted);
        AckedRange rest;
        try {
            rest = store.ackRangeExcept(range.from(), range.to(), sorted);
        } catch (AckNotWrittenException notWritten) {
            rest = notWritten.acked(); // the queue's storage failed (the store says so); acknowledged in memory
        }
        backlog.removed(rest.bytes());
        return acked + rest.messages();
    }

    /** The ids in {@code range} of a set of {@code size} ids, which {@code forEach} walks. */
    private static long[] idsIn(int size, Consumer<LongConsumer> forEach, IdRange range) {
        if (size == 0) {
            return new long[0];
        }
        long[] in = new long[size];
        int[] n = {0};
        forEach.accept(id -> {
            if (range.contains(id)) {
                in[n[0]++] = id;
            }
        });
        return Arrays.copyOf(in, n[0]);
    }

    /**
     * Rule R10 of docs/replication.md: a cluster node records the leader's deliveries, so that it delivers with their
     * counts if it leads next. A count only ever grows: one at or below what this node recorded (it led before and
     * delivered more) changes nothing; acknowledged ids are skipped by the store.
     *
     * <p>A store whose ack state cannot be written (its storage failed) records every count in memory and throws: that
     * is applied, as a replicated ack in that state is ({@link #ackAll}), so the node goes on until its next append to
     * this queue or its next snapshot stops it (rule R2); no snapshot marker is written past a failed store, so a restart
     * applies the entry again from the log and the counts survive it. Only a store that left a count unrecorded (closed)
     * fails the apply.
     */
    void recordReplicatedDeliveries(long[] deliveredIds, int[] counts) {
        long[] higher = new long[deliveredIds.length];
        int[] higherCounts = new int[counts.length];
        int n = 0;
        for (int i = 0; i < deliveredIds.length; i++) {
            if (!store.isAcked(deliveredIds[i]) && counts[i] > store.deliveryCount(deliveredIds[i])) {
                higher[n] = deliveredIds[i];
                higherCounts[n++] = counts[i];
            }
        }
        try {
            store.recordDeliveries(higher, higherCounts, n);
        } catch (RuntimeException failure) {
            for (int i = 0; i < n; i++) {
                if (store.deliveryCount(higher[i]) < higherCounts[i]) {
                    throw failure;
                }
            }
        }
    }

    /**
     * Rule R5: this node stopped leading, so the acks it settled and has not applied may never commit. Returns their
     * ids (still tracked, unacknowledged in the store) with the bytes each took off the backlog: the queue counts them
     * again and makes them due again, and if their entry does commit after all, applying it acknowledges them then.
     */
    IdBytes.Drained unapplied() {
        return awaitingApply.size() == 0 ? IdBytes.Drained.NONE : awaitingApply.drain();
    }

    /** True if a consumer acknowledged {@code id} here and its ACK entry is not applied yet (R5): it is on its way out. */
    boolean awaitingApply(long id) {
        return awaitingApply.size() > 0 && awaitingApply.contains(id);
    }

    /** Hands {@code action} every id acknowledged here whose ACK entry is not applied yet (R5): on its way out. */
    void forEachAwaitingApply(LongConsumer action) {
        awaitingApply.forEach(action);
    }

    /** Hands what is batched to the store. */
    void flush() {
        if (size > 0) {
            storeBatch();
        }
    }

    private void storeBatch() {
        RuntimeException failure = ackAll(store, ids, size);
        size = 0;
        if (failure != null && unwritten == null) {
            unwritten = failure;
        }
    }

    /** Why the acks handed to the store since {@link #begin} are acknowledged in memory only, or null if they are written. */
    RuntimeException unwritten() {
        return unwritten;
    }

    /**
     * Hands {@code count} ids of {@code batch} to {@code store}. They are out of their consumer's deliveries (or their
     * transaction's hold) and the tracked set already: left unacknowledged, nothing would deliver them again until a
     * restart. A store whose ack state cannot be written (a journal rotation's checkpoint failed: its storage is failed,
     * docs/storage.md) still acknowledges the whole batch in memory, so that the consumers can drain the queue, and
     * throws after trying one checkpoint ({@code AckLog.ackAll}); it has recorded its failure, so the ack goes on. Only a
     * store that left an id unacknowledged (closed: it took none) fails the ack. No second try, and one look per id at
     * most: a try costs a whole checkpoint, with an fsync on a failing disk, on the event loop the queue shares with others.
     * Returns the store's failure, for a caller to say the acks are in memory only, or null if they were written. Also
     * the transaction log's, a store of its own (docs/transactions.md), on the coordinator's thread.
     */
    public static RuntimeException ackAll(QueueStore store, long[] batch, int count) {
        try {
            store.ackAll(batch, count);
            return null;
        } catch (RuntimeException failure) {
            for (int i = 0; i < count; i++) {
                if (!store.isAcked(batch[i])) {
                    throw failure;
                }
            }
            return failure;
        }
    }

    /**
     * Acknowledges {@code id} in {@code store}, as {@link #ackAll} does a batch: a store whose ack state cannot be written
     * (its storage failed) acknowledges it in memory and throws, and that is an ack all the same: the caller counts it and
     * takes it off the backlog, as the store's figures say. Returns that failure, for the caller to say the ack is in
     * memory only, or null if the ack was written. Throws if the store left {@code id} unacknowledged (closed: it took none).
     */
    static RuntimeException ack(QueueStore store, long id) {
        try {
            store.ack(id);
            return null;
        } catch (RuntimeException failure) {
            if (!store.isAcked(id)) {
                throw failure;
            }
            return failure;
        }
    }

    /** The oldest store timestamp acknowledged since {@link #begin}, or {@link Long#MAX_VALUE} if none. */
    long oldestAppendedMillis() {
        return oldestAppendedMillis;
    }

    /** The ids acknowledged since {@link #begin}, as ranges, if it was asked to collect them and there were any; else null. */
    List<IdRange> replicatedRanges() {
        List<IdRange> ranges = replicated == null ? null : replicated.build().get(RANGES_KEY);
        replicated = null;
        return ranges;
    }
}
