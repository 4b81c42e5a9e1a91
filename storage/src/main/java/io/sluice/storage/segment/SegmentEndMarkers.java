package io.sluice.storage.segment;

import net.openhft.chronicle.bytes.MappedBytes;
import net.openhft.chronicle.queue.ExcerptTailer;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueStore;
import net.openhft.chronicle.wire.DocumentContext;
import net.openhft.chronicle.wire.Wire;
import net.openhft.chronicle.wire.WireOut;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Rule "a sealed segment ends in its marker" (docs/storage.md, "Recovery"). Chronicle's tailer leaves a segment for the
 * next one only at its end-of-cycle marker; a roll writes it, and a machine crash can keep a sealed segment's records
 * and the next segment's but not the marker: every reader then stops at that segment's last record. Chronicle repairs
 * this only in its appender, and only in part: at its creation it marks the segments below the one before the newest
 * segment that has a marker, and at its first append the one segment it was left in. Recovery writes each missing
 * marker itself, with Chronicle's own end-of-wire walk, before any reader is opened.
 *
 * <p>The walk starts at the last record Chronicle's index counts, not at the position the segment's header names (a
 * machine crash can keep an older header page), and it is made on a wire set up as Chronicle's appender sets up its
 * own: with the header padding of the segment's data version (each header aligned to an int). Without the padding, after
 * a record whose length leaves padding before the next header, the walk reads the padding as an empty header and writes
 * a marker there, across the real one, which then reads as the header of a document never complete: every reader
 * stops at that segment's end.
 *
 * <p>Recovery thread only, before the queue is served: no append can run, so Chronicle's write lock is not taken.
 */
final class SegmentEndMarkers {
    private static final Logger LOG = LoggerFactory.getLogger(SegmentEndMarkers.class);
    /**
     * How long Chronicle's walk waits on a document still being written after the last counted record before it writes
     * the marker over it: at recovery no writer is left, so such a document was cut short by the crash.
     */
    private static final long INCOMPLETE_DOCUMENT_WAIT_MS = 100;

    private SegmentEndMarkers() {
    }

    /**
     * Writes the end marker, where it is missing, into every segment of {@code chronicle} before {@code lastSegment}.
     * A segment whose last counted record cannot be read is left as it is and logged: where its records end is not
     * known, and a marker written at the first gap would hide from readers the records the index still finds after it.
     * Returns the segments written into, to be forced.
     */
    static List<Integer> writeMissing(String queueName, SingleChronicleQueue chronicle, int lastSegment) {
        List<Integer> written = new ArrayList<>();
        int first = chronicle.firstCycle();
        if (first == Integer.MAX_VALUE || first >= lastSegment) {
            return written;
        }
        ExcerptTailer tailer = chronicle.createTailer();
        try {
            for (long cycle : chronicle.listCyclesBetween(first, chronicle.lastCycle())) {
                int segment = (int) cycle;
                if (segment >= lastSegment) {
                    continue;
                }
                SingleChronicleQueueStore store = chronicle.storeForCycle(segment, chronicle.epoch(), false, null);
                if (store == null) {
                    continue;
                }
                try {
                    long walkFrom;
                    Throwable unreadable = null;
                    try {
                        walkFrom = lastRecordHeader(tailer, store, segment);
                    } catch (RuntimeException | InternalError e) {
                        // InternalError: a mapped read faulted, a file cut short. The tailer's state is not known after it.
                        walkFrom = -1;
                        unreadable = e;
                        tailer.close();
                        tailer = chronicle.createTailer();
                    }
                    if (walkFrom < 0) {
                        LOG.warn("Queue '{}': the last record Chronicle's index counts in sealed segment {} cannot be read{}; "
                                + "its end marker is not checked, and a reader that finds none stops there.",
                                queueName, store.file(), unreadable == null ? "" : " (" + unreadable + ")");
                    } else if (writeIfMissing(chronicle, store, walkFrom)) {
                        written.add(segment);
                    }
                } finally {
                    chronicle.closeStore(store);
                }
            }
        } finally {
            tailer.close();
        }
        return written;
    }

    /**
     * Where the header of {@code segment}'s last counted record is, or the position its header names if it counts none;
     * -1 if that record cannot be read.
     */
    private static long lastRecordHeader(ExcerptTailer tailer, SingleChronicleQueueStore store, int segment) {
        long records = tailer.excerptsInCycle(segment);
        if (records <= 0) {
            return store.writePosition();
        }
        long last = SegmentRollCycle.INSTANCE.toIndex(segment, records - 1);
        if (!tailer.moveToIndex(last)) {
            return -1;
        }
        try (DocumentContext dc = tailer.readingDocument()) {
            if (!dc.isPresent() || dc.index() != last) {
                return -1;
            }
            return dc.wire().bytes().readPosition() - Integer.BYTES; // the document's bytes start after its header word
        }
    }

    /** Runs Chronicle's end-of-wire walk from {@code walkFrom}; true if it had to write the marker. */
    private static boolean writeIfMissing(SingleChronicleQueue chronicle, SingleChronicleQueueStore store, long walkFrom) {
        MappedBytes bytes = store.bytes();
        try {
            Wire wire = chronicle.wireType().apply(bytes);
            wire.usePadding(store.dataVersion() > 0);
            if (wire.endOfWire(false, 0, TimeUnit.MILLISECONDS, walkFrom) == WireOut.EndOfWire.PRESENT) {
                return false;
            }
            wire.endOfWire(true, INCOMPLETE_DOCUMENT_WAIT_MS, TimeUnit.MILLISECONDS, walkFrom);
            return true;
        } finally {
            bytes.releaseLast();
        }
    }
}
