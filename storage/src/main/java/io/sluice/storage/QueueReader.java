package io.sluice.storage;

import io.sluice.storage.readahead.ReaderCursor;
import io.sluice.storage.segment.MappedFileFaultException;
import io.sluice.storage.segment.RecordCodec;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.SegmentLog;
import io.sluice.storage.segment.SegmentRecords;
import io.sluice.storage.segment.SegmentRollCycle;
import net.openhft.chronicle.queue.ExcerptTailer;

import java.util.HashSet;
import java.util.Set;

/**
 * Reads a queue's unacknowledged messages in store order, for delivery. Starts at the oldest
 * unacknowledged message and skips every message acknowledged by the time it is reached.
 *
 * <p>Each message is returned at most once by one reader, relocation included: a straggler is only
 * relocated out of a segment every open reader has already passed (rule R1 of docs/storage.md), so
 * each of them has already returned it, and the store tells each of them to skip the copy.
 *
 * <p>A record that fails its checksum is logged with its file and offset, counted, acknowledged
 * (it can never be delivered, and must not pin its segment) and skipped.
 *
 * <p>Not thread-safe: one reader per dispatching thread. The reader pins its current segment and
 * everything after it against reclaim until it moves on or is closed.
 */
public final class QueueReader implements AutoCloseable {
    private final QueueStore queue;
    private final ExcerptTailer tailer;
    private final RecordCodec codec = new RecordCodec();
    private final StoredMessage message = new StoredMessage();
    private final int[] length = new int[1];
    /** Segment the reader is in, read by the reclaimer. */
    volatile int segment;
    /** Asks reclaim for a pass once {@link #segment} moved on (rule "what held a segment back asks for a pass when it lets go"). */
    private final Runnable movedOn;
    /** Index of the record the reader will look at next, read by the read-ahead thread. */
    volatile long nextIndex = -1;
    /** Index of the last record the read-ahead thread touched for this reader, or -1. */
    volatile long readAheadIndex = -1;
    /**
     * Where relocated copies of messages this reader has already returned were written; the reader
     * skips them when it gets there. Guarded by the queue's lock (filled by relocation, emptied by
     * {@link QueueStore#fillIfUnacked}).
     */
    final Set<Long> copiesToSkip = new HashSet<>();
    private boolean closed;

    QueueReader(QueueStore queue, ExcerptTailer tailer, int segment, Runnable movedOn) {
        this.queue = queue;
        this.tailer = tailer;
        this.segment = segment;
        this.movedOn = movedOn;
    }

    /**
     * The next unacknowledged message, or null if the reader has reached the end of what is stored.
     * The returned instance is reused by the next call.
     *
     * @throws MappedFileFaultException if reading the segment faulted (SIGBUS); the queue is failed then
     */
    public StoredMessage next() {
        if (closed) {
            throw new IllegalStateException("reader of queue '" + queue.name() + "' is closed");
        }
        while (true) {
            long index;
            try {
                index = SegmentRecords.readNext(tailer, codec, length);
            } catch (InternalError e) {
                // A SIGBUS on the mapping: the caller (a broker event loop) lives on; the queue fails safe.
                MappedFileFaultException fault = new MappedFileFaultException("a read of queue '" + queue.name() + "'",
                        queue.segmentDirectory().resolve(SegmentFiles.fileName(segment)), e);
                queue.failed("reading a segment", fault);
                throw fault;
            }
            if (index < 0) {
                return null;
            }
            int at = SegmentRollCycle.INSTANCE.toCycle(index);
            if (at != segment) {
                segment = at;
                movedOn.run(); // the segment left may be all acknowledged, held only by this reader (R1)
            }
            nextIndex = index + 1;
            String problem = codec.loaded(length[0]);
            // One lock acquisition per message: the ack check and the delivery count together.
            if (queue.fillIfUnacked(this, message, codec, index, problem)) {
                return message;
            }
        }
    }

    /** The index the reader will look at next (or just past the end). */
    public long position() {
        return tailer.index();
    }

    /** The last record the read-ahead thread has touched for this reader (-1 if none): for diagnostics. */
    public long readAheadIndex() {
        return readAheadIndex;
    }

    /** The file the reader is in, for diagnostics. */
    public String currentFile() {
        return SegmentFiles.fileName(segment);
    }

    /** What the read-ahead thread's cursor follows of this reader. */
    ReaderCursor.FollowedReader followed() {
        return new ReaderCursor.FollowedReader() {
            @Override
            public long nextIndex() {
                return nextIndex;
            }

            @Override
            public void touchedThrough(long index) {
                readAheadIndex = index;
            }

            @Override
            public boolean queueClosed() {
                return queue.isClosed();
            }

            @Override
            public void faulted(MappedFileFaultException fault) {
                queue.failed("reading ahead", fault);
            }
        };
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            tailer.close();
            queue.readerClosed(this);
        }
    }
}
