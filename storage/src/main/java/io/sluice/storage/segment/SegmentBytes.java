package io.sluice.storage.segment;

import net.openhft.chronicle.queue.ExcerptTailer;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueStore;
import net.openhft.chronicle.wire.DocumentContext;

/** The two measures of a segment's size that {@link SegmentLog#countSegments} takes, one per kind of segment. */
final class SegmentBytes {
    private SegmentBytes() {
    }

    /**
     * The bytes {@link SegmentLog#append} counts for the records of {@code segment}: each record's length plus Chronicle's
     * 4-byte header.
     */
    static long ofRecords(SegmentLog log, int segment) {
        long bytes = 0;
        try (ExcerptTailer tailer = log.newTailer()) {
            if (!tailer.moveToIndex(SegmentRollCycle.INSTANCE.toIndex(segment, 0))) {
                return 0;
            }
            while (true) {
                try (DocumentContext dc = tailer.readingDocument()) {
                    if (!dc.isPresent() || SegmentRollCycle.INSTANCE.toCycle(dc.index()) != segment) {
                        return bytes;
                    }
                    bytes += dc.wire().bytes().readRemaining() + 4;
                }
            }
        }
    }

    /** Bytes written to a segment file (Chronicle's write position: records plus its index). */
    static long ofFile(SingleChronicleQueue chronicle, int segment) {
        SingleChronicleQueueStore store = chronicle.storeForCycle(segment, chronicle.epoch(), false, null);
        if (store == null) {
            return 0;
        }
        try {
            return store.writePosition();
        } finally {
            chronicle.closeStore(store);
        }
    }
}
