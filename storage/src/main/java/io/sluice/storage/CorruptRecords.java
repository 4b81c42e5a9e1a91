package io.sluice.storage;

import io.sluice.storage.ack.AckLog;
import io.sluice.storage.durability.Durability;
import io.sluice.storage.segment.RecordCodec;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.SegmentRollCycle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A queue's damaged records, once found by a reader, a read by id or reclaim: each is logged, acknowledged so
 * that it is never delivered nor read again, and counted (the count starts with what recovery found).
 *
 * <p>Threads: every method runs under its {@link QueueStore}'s lock, which guards the count.
 */
final class CorruptRecords {
    /** The store's logger: operators filter the queue's storage lines on it. */
    private static final Logger LOG = LoggerFactory.getLogger(QueueStore.class);

    private final String queueName;
    private final Path segmentDirectory;
    private final AckLog ackLog;
    private final Durability durability;
    private long count;
    /**
     * Message bytes (headers plus payload, as {@link QueueStore#unackedMessageBytes} counts a record) of the damaged
     * records discarded while unacknowledged: the broker counts its backlog's bytes itself and takes these off it.
     * Written under the lock, read by any thread.
     */
    private volatile long discardedMessageBytes;
    /**
     * Asks reclaim for a pass: a record this acknowledged may have been the last message keeping its sealed segment,
     * which no reader may hold (rule "what held a segment back asks for a pass when it lets go").
     */
    private final Runnable acknowledgedOne;

    CorruptRecords(String queueName, Path segmentDirectory, AckLog ackLog, Durability durability, long foundByRecovery,
                   Runnable acknowledgedOne) {
        this.acknowledgedOne = acknowledgedOne;
        this.queueName = queueName;
        this.segmentDirectory = segmentDirectory;
        this.ackLog = ackLog;
        this.durability = durability;
        this.count = foundByRecovery;
    }

    /**
     * Record {@code index} of {@code recordLength} bytes failed its check ({@code problem}): logged, acknowledged unless
     * it is, counted.
     */
    void discardLocked(long index, int recordLength, String problem) {
        CorruptRecordException e = exception(index, problem);
        LOG.error("Queue '{}': {}. The record is skipped and will never be delivered.", queueName, e.getMessage());
        count++;
        if (!ackLog.state().isAcked(index)) {
            try {
                ackLog.ack(index);
            } catch (IOException io) {
                throw AckUpdates.failure(queueName, durability, io);
            }
            discardedMessageBytes += Math.max(0, recordLength - RecordCodec.HEADER_BYTES);
            acknowledgedOne.run();
        }
    }

    /** What a read of damaged record {@code index} throws: its segment file, its index and the problem. */
    CorruptRecordException exception(long index, String problem) {
        int segment = SegmentRollCycle.INSTANCE.toCycle(index);
        return new CorruptRecordException(SegmentFiles.file(segmentDirectory, segment), index, -1, problem);
    }

    /** See {@link #discardedMessageBytes}: grows only. */
    long discardedMessageBytes() {
        return discardedMessageBytes;
    }

    long countLocked() {
        return count;
    }
}
