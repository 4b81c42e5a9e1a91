package io.sluice.storage;

import io.sluice.storage.ack.AckLog;
import io.sluice.storage.ack.AckResult;
import io.sluice.storage.ack.AckStateReader;
import io.sluice.storage.durability.Durability;
import io.sluice.storage.reclaim.Reclaimer;
import io.sluice.storage.segment.RangeBytes;
import io.sluice.storage.segment.SegmentLog;
import io.sluice.storage.segment.SegmentRollCycle;

import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * Writes one queue's acks and delivery counts into its {@link AckLog}. An I/O failure there fails the queue's
 * storage (rule "a failed force is final": the change is in memory only) and is thrown as an
 * {@link UncheckedIOException} ({@link #failure}). An ack that leaves a
 * sealed segment with nothing unacknowledged, or a range ack that acknowledged anything, asks the {@link Reclaimer}
 * for a pass.
 *
 * <p>Threads: every method but {@link #failure} runs under the {@link QueueStore}'s lock, which guards the log and
 * the ack state.
 */
final class AckUpdates {
    private final String name;
    private final SegmentLog log;
    private final AckLog ackLog;
    private final AckStateReader acks;
    private final Reclaimer reclaimer;
    private final Durability durability;

    AckUpdates(String name, SegmentLog log, AckLog ackLog, Reclaimer reclaimer, Durability durability) {
        this.name = name;
        this.log = log;
        this.ackLog = ackLog;
        this.acks = ackLog.state();
        this.reclaimer = reclaimer;
        this.durability = durability;
    }

    /**
     * What a failed I/O step of queue {@code queueName}'s ack state throws, once it failed the queue's storage
     * through {@code durability}: whoever wrote the ack state (an ack, a reader discarding a record, reclaim), the
     * change is in memory only, and may be lost to a restart, so nothing more may be confirmed.
     */
    static UncheckedIOException failure(String queueName, Durability durability, IOException e) {
        durability.fail("writing its ack state", e);
        return new UncheckedIOException("ack state of queue '" + queueName + "' failed: " + e.getMessage(), e);
    }

    /** See {@link QueueStore#ack}. */
    AckResult ackLocked(long id) {
        long physical = acks.physicalId(id);
        AckResult result = io(() -> ackLog.ack(id));
        if (result == AckResult.NEWLY_ACKED) {
            acknowledged(physical);
        }
        return result;
    }

    /** See {@link QueueStore#ackRange}. */
    long ackRangeLocked(long fromId, long toIdInclusive) {
        long newly = io(() -> ackLog.ackRange(fromId, toIdInclusive));
        if (newly > 0) {
            reclaimer.wanted();
        }
        return newly;
    }

    /** See {@link QueueStore#ackAllExcept}. */
    long ackAllExceptLocked(long[] keep) {
        long newly = io(() -> ackLog.ackAllExcept(keep));
        if (newly > 0) {
            reclaimer.wanted();
        }
        return newly;
    }

    /**
     * See {@link QueueStore#ackRangeExcept}: the bytes are counted before the acks ({@link RangeBytes}: per segment, the
     * smaller of the records it takes and the others is read), so a range that takes nearly all of its segments reads
     * few records and holds the lock briefly. An ack state that cannot be written acknowledges the whole range in memory
     * before it throws ({@link AckLog#ackRangeExcept}): the failure then carries what that took
     * ({@link AckNotWrittenException}), counted as the difference in unacknowledged messages, since the throw loses the count.
     */
    AckedRange ackRangeExceptLocked(long fromId, long toIdInclusive, long[] keep) {
        long bytes = RangeBytes.unackedBytes(log, acks, fromId, toIdInclusive, keep);
        long unackedBefore = acks.unackedCount();
        long newly;
        try {
            newly = io(() -> ackLog.ackRangeExcept(fromId, toIdInclusive, keep));
        } catch (UncheckedIOException failure) {
            AckedRange acked = new AckedRange(unackedBefore - acks.unackedCount(), bytes);
            if (acked.messages() > 0) {
                reclaimer.wanted(); // a failed storage still gives the disk of acknowledged segments back (docs/storage.md)
            }
            throw new AckNotWrittenException(failure, acked);
        }
        if (newly > 0) {
            reclaimer.wanted();
        }
        return new AckedRange(newly, bytes);
    }

    /** See {@link QueueStore#ackAll}. */
    int ackAllLocked(long[] ids, int count) {
        return io(() -> ackLog.ackAll(ids, count, this::acknowledged));
    }

    /** See {@link QueueStore#recordDelivery}. */
    void recordDeliveryLocked(long id, int count) {
        io(() -> ackLog.recordDelivery(id, count));
    }

    /** See {@link QueueStore#recordDeliveries}. */
    void recordDeliveriesLocked(long[] ids, int[] counts, int count) {
        io(() -> {
            ackLog.recordDeliveries(ids, counts, count);
            return null;
        });
    }

    /** The record at {@code physicalId} was newly acknowledged: reclaim is wanted if its sealed segment is now all acknowledged. */
    private void acknowledged(long physicalId) {
        int segment = SegmentRollCycle.INSTANCE.toCycle(physicalId);
        if (segment < log.writeSegment() && acks.unackedCount(segment) == 0) {
            reclaimer.wanted();
        }
    }

    /** An I/O step of the ack state. */
    private interface IoStep<T> {
        T run() throws IOException;
    }

    private <T> T io(IoStep<T> step) {
        try {
            return step.run();
        } catch (IOException e) {
            throw failure(name, durability, e);
        }
    }
}
