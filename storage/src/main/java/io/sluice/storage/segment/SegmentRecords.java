package io.sluice.storage.segment;

import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.queue.ExcerptTailer;
import net.openhft.chronicle.wire.DocumentContext;

/** Walking a segment log's records with a tailer: the one read idiom every reader of the records uses. Stateless. */
public final class SegmentRecords {
    private SegmentRecords() {
    }

    /**
     * The one record-read idiom: reads the next document of {@code tailer} into {@code codec} (not yet
     * checked: call {@link RecordCodec#loaded(int)} with the returned length) and returns its id, or
     * -1 at the end. {@code lengthOut[0]} receives the record's length.
     */
    public static long readNext(ExcerptTailer tailer, RecordCodec codec, int[] lengthOut) {
        try (DocumentContext dc = tailer.readingDocument()) {
            if (!dc.isPresent()) {
                return -1;
            }
            Bytes<?> bytes = dc.wire().bytes();
            int length = (int) bytes.readRemaining();
            bytes.read(codec.arrayFor(length), 0, length);
            lengthOut[0] = length;
            return dc.index();
        }
    }

    /** Visits the records from {@code fromId} on; returns how many were damaged (skipped, not visited). */
    static long visitFrom(ExcerptTailer tailer, long fromId, RecordCodec codec, int[] length, SegmentLog.RecordVisitor visitor) {
        long damaged = 0;
        for (long id = readNext(tailer, codec, length); id >= 0; id = readNext(tailer, codec, length)) {
            if (id < fromId) {
                continue;
            }
            if (codec.loaded(length[0]) != null) {
                damaged++;
            } else {
                visitor.record(id, codec);
            }
        }
        return damaged;
    }
}
