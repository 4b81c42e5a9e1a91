package io.sluice.storage.segment;

import io.sluice.storage.StagedRecordVisitor;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.queue.ExcerptTailer;
import net.openhft.chronicle.wire.DocumentContext;

import java.util.Map;
import java.util.function.IntToLongFunction;
import java.util.function.LongPredicate;

/**
 * The exact bytes of a queue's unacknowledged messages (the unit of the broker's byte quotas), counted when a queue
 * opens over its {@link SegmentLog}'s segments: from the tallies where rule "a sealed segment's tally" (docs/storage.md)
 * allows, record by record elsewhere.
 *
 * <p>Threads: under the owner's lock, as the {@link SegmentLog} it counts.
 */
public final class BacklogBytes {
    private final SegmentLog log;
    /** Records the last {@link #messageBytesFrom} read one by one; guarded by the owner's lock. */
    private long recordsRead;

    BacklogBytes(SegmentLog log) {
        this.log = log;
    }

    /**
     * Headers plus payload of the records from {@code fromId} on that {@code acked} does not reject (a record's
     * message bytes are its length less {@link RecordCodec#HEADER_BYTES}); the records a transaction staged also go to
     * {@code staged}. A segment every record of which is unacknowledged ({@code unacked}: the ack state's count of a
     * segment's unacknowledged records, 0 for a segment it does not know) and whose tally is known
     * without staged records (rule "a sealed segment's tally", docs/storage.md) counts its tally's bytes unread; any
     * other is read, one record after the other. A segment read whole and wholly unacknowledged gets its tally then,
     * kept beside it if sealed, so that the next open need not read it. Under the owner's lock, with nothing
     * appended meanwhile.
     */
    public long messageBytesFrom(long fromId, LongPredicate acked, IntToLongFunction unacked,
                                 StagedRecordVisitor staged) {
        recordsRead = 0;
        if (fromId < 0) {
            return 0;
        }
        long bytes = 0;
        try (ExcerptTailer tailer = log.newTailer()) {
            for (Map.Entry<Integer, SegmentTally> entry : log.tallies().tailMap(SegmentRollCycle.INSTANCE.toCycle(fromId), true).entrySet()) {
                int segment = entry.getKey();
                SegmentTally tally = entry.getValue();
                if (tally.messages == 0) {
                    continue;
                }
                long first = SegmentRollCycle.INSTANCE.toIndex(segment, 0);
                boolean whole = fromId <= first && unacked.applyAsLong(segment) == tally.messages;
                if (whole && tally.messageBytes >= 0 && tally.stagedRecords == 0) {
                    bytes += tally.messageBytes;
                    continue;
                }
                if (!tailer.moveToIndex(Math.max(fromId, first))) {
                    continue;
                }
                long wholeSegmentBytes = 0; // every record's, acknowledged or not: the tally if the segment is whole
                long wholeSegmentStaged = 0;
                while (true) {
                    try (DocumentContext dc = tailer.readingDocument()) {
                        if (!dc.isPresent() || SegmentRollCycle.INSTANCE.toCycle(dc.index()) != segment) {
                            break;
                        }
                        recordsRead++;
                        Bytes<?> record = dc.wire().bytes();
                        long length = record.readRemaining();
                        int messageBytes = (int) Math.max(0, length - RecordCodec.HEADER_BYTES);
                        wholeSegmentBytes += messageBytes;
                        if (!acked.test(dc.index())) {
                            bytes += messageBytes;
                            if (length >= RecordCodec.HEADER_BYTES && reportStaged(record, dc.index(), messageBytes, staged)) {
                                wholeSegmentStaged++;
                            }
                        }
                    }
                }
                if (whole && tally.messageBytes < 0) {
                    tally.messageBytes = wholeSegmentBytes;
                    tally.stagedRecords = wholeSegmentStaged;
                    if (segment < log.writeSegment()) {
                        log.keepTally(segment, tally);
                    }
                }
            }
        }
        return bytes;
    }

    /** Records the last {@link #messageBytesFrom} read one by one (the rest it took from tallies); for tests. */
    public long recordsRead() {
        return recordsRead;
    }

    /**
     * Tells {@code staged} of the record at the reading position if a transaction staged it. Reads three
     * fields in place (Chronicle's bytes are little-endian, as {@link RecordCodec} writes); the checksum
     * is not verified here: a damaged record is found by the reader that reaches it.
     */
    private static boolean reportStaged(Bytes<?> record, long index, int messageBytes, StagedRecordVisitor staged) {
        long start = record.readPosition();
        int flags = record.readUnsignedByte(start + RecordCodec.OFFSET_FLAGS_BYTE);
        if ((flags & RecordCodec.FLAG_TRANSACTIONAL) != 0) {
            long id = (flags & RecordCodec.FLAG_RELOCATED) != 0 ? record.readLong(start + RecordCodec.OFFSET_ORIGINAL_ID_FIELD) : index;
            staged.staged(id, record.readLong(start + RecordCodec.OFFSET_PRODUCER_ID_FIELD),
                    record.readLong(start + RecordCodec.OFFSET_PRODUCER_SEQUENCE_FIELD) == RecordCodec.STAGED_COMMIT_RECORD,
                    messageBytes);
            return true;
        }
        return false;
    }
}
