package io.sluice.storage.readahead;

import io.sluice.storage.segment.MappedFileFaultException;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.SegmentLog;
import io.sluice.storage.segment.SegmentRollCycle;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.queue.ExcerptTailer;
import net.openhft.chronicle.wire.DocumentContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.function.IntToLongFunction;
import java.util.function.LongSupplier;

/**
 * Follows one reader for the read-ahead thread: touches its coming records, at most
 * {@code budgetMessages} ahead of it, so that the reader finds their pages resident. Used only on the
 * read-ahead thread, apart from its construction.
 */
public final class ReaderCursor implements ReadAhead.Cursor {
    /**
     * A reader fewer than this many records behind the tail of the segment being written reads what
     * was just appended, which is resident: touching it would only repeat the reader's work (under W1
     * that repetition cost 4.7 % of the broker's CPU and a wake-up a millisecond).
     */
    public static final int MIN_LAG = 4096;
    private static final Logger LOG = LoggerFactory.getLogger(ReaderCursor.class);

    /** What the cursor needs of the reader it follows; read on the read-ahead thread. */
    public interface FollowedReader {
        /** The id the reader will look at next, or -1 before its first read. */
        long nextIndex();

        /** The cursor has touched records up to {@code index}: for diagnostics. */
        void touchedThrough(long index);

        /** True once the reader's queue is closed: the cursor stops. */
        boolean queueClosed();

        /** A mapped read of {@code file} faulted: the reader's queue must fail safe. */
        void faulted(MappedFileFaultException fault);
    }

    private final FollowedReader reader;
    private final SegmentLog log;
    private final LongSupplier writtenIndex;
    private final IntToLongFunction segmentMessages;
    private final long startIndex;
    private final int budgetMessages;
    private ExcerptTailer tailer;
    /** Index of the last record touched, or -1. */
    private long touched = -1;
    private long sink;

    /**
     * @param startIndex      where the reader starts (its first id, or the end of the log)
     * @param writtenIndex    the queue's highest appended id
     * @param segmentMessages records in a segment (takes the queue's lock)
     */
    public ReaderCursor(FollowedReader reader, SegmentLog log, LongSupplier writtenIndex, IntToLongFunction segmentMessages,
                        long startIndex, int budgetMessages) {
        this.reader = reader;
        this.log = log;
        this.writtenIndex = writtenIndex;
        this.segmentMessages = segmentMessages;
        this.startIndex = startIndex;
        this.budgetMessages = budgetMessages;
    }

    @Override
    public int advance(int limit) {
        if (reader.queueClosed()) {
            return 0;
        }
        long next = reader.nextIndex();
        long readerAt = next >= 0 ? next : startIndex;
        int readerSegment = SegmentRollCycle.INSTANCE.toCycle(readerAt);
        if (tailer != null && tailer.cycle() < readerSegment) {
            // The tailer maps the segment it is in, which the reader has left: reclaim may delete it, and a
            // file stays on disk while anything maps it. It moves to the reader's segment (kept by reclaim
            // while the reader is in it) rather than being closed, so that a reader crossing segments near
            // the tail costs no new tailer; if that segment cannot be found, the tailer is closed.
            touched = -1;
            if (!tailer.moveToCycle(readerSegment)) {
                releaseTailer();
            }
        }
        if (nearTail(readerAt)) {
            return 0;
        }
        if (tailer == null || touched < readerAt - 1) {
            if (tailer == null) {
                tailer = log.newTailer();
            }
            if (!tailer.moveToIndex(readerAt)) {
                return 0; // nothing stored there yet (the reader is at the tail); a tailer left behind moves next turn
            }
            touched = readerAt - 1;
        }
        int done = 0;
        while (done < limit && ahead(readerAt) < budgetMessages) {
            try (DocumentContext dc = tailer.readingDocument()) {
                if (!dc.isPresent()) {
                    break;
                }
                Bytes<?> bytes = dc.wire().bytes();
                if (bytes.readRemaining() > 0) {
                    sink += bytes.readByte(bytes.readLimit() - 1); // faults the record's last page in
                }
                touched = dc.index();
            }
            done++;
            reader.touchedThrough(touched);
        }
        return done;
    }

    private boolean nearTail(long readerAt) {
        long tail = writtenIndex.getAsLong();
        if (tail < 0 || readerAt < 0) {
            return true;
        }
        int tailSegment = SegmentRollCycle.INSTANCE.toCycle(tail);
        return SegmentRollCycle.INSTANCE.toCycle(readerAt) == tailSegment
                && SegmentRollCycle.INSTANCE.toSequenceNumber(tail) - SegmentRollCycle.INSTANCE.toSequenceNumber(readerAt) < MIN_LAG;
    }

    /** Records touched beyond the reader, counted within segments (indexes jump between them). */
    private long ahead(long readerAt) {
        if (touched < readerAt) {
            return 0;
        }
        int readerSegment = SegmentRollCycle.INSTANCE.toCycle(readerAt);
        int touchedSegment = SegmentRollCycle.INSTANCE.toCycle(touched);
        long touchedSeq = SegmentRollCycle.INSTANCE.toSequenceNumber(touched);
        if (readerSegment == touchedSegment) {
            return touchedSeq - SegmentRollCycle.INSTANCE.toSequenceNumber(readerAt) + 1;
        }
        return touchedSeq + 1 + Math.max(0, segmentMessages.applyAsLong(readerSegment)
                - SegmentRollCycle.INSTANCE.toSequenceNumber(readerAt));
    }

    private void releaseTailer() {
        if (tailer != null) {
            tailer.close();
            tailer = null;
            touched = -1;
        }
    }

    @Override
    public void faulted(InternalError e) {
        long at = touched >= 0 ? touched + 1 : startIndex;
        Path file = SegmentFiles.file(log.segmentDirectory(), SegmentRollCycle.INSTANCE.toCycle(at));
        reader.faulted(new MappedFileFaultException("reading ahead", file, e));
    }

    @Override
    public void release() {
        releaseTailer();
        if (sink == 42) {
            LOG.trace("read-ahead checksum {}", sink); // keeps the touching reads from being optimised away
        }
    }
}
