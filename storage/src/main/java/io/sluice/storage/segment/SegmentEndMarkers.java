package io.sluice.storage.segment;

import net.openhft.chronicle.bytes.MappedBytes;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueStore;

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntPredicate;

/**
 * Rule "a sealed segment ends in its marker" (docs/storage.md, "Recovery"): Chronicle's tailer leaves a segment for the
 * next one at its end-of-cycle marker, and a sealed segment that lacks it (the roll wrote it, a machine crash kept the
 * segment's records and the next segment's but not the marker) stops every reader at its last record. Chronicle's
 * appender writes a missing marker at its first append, and only into segments above the one its metadata file says
 * it normalised last, so until then, or for good if the metadata file came through the crash newer than the segment,
 * the messages of every later segment were never delivered. Recovery writes the marker into each sealed segment,
 * before any reader is opened. Recovery thread only.
 */
final class SegmentEndMarkers {
    /** How long Chronicle may wait for a document in progress at the end of a segment; none is at recovery. */
    private static final long TIMEOUT_MS = 1_000;

    private SegmentEndMarkers() {
    }

    /**
     * Writes the end marker, where it is missing, into every segment of {@code chronicle} before {@code lastSegment}
     * whose last record Chronicle's index counts reads ({@code whole}): one that does not is left as it is, for the
     * reader or the operator to meet (rule "what the index counts is there" covers only the last segment). Returns the
     * segments written into, to be forced.
     */
    static List<Integer> writeMissing(SingleChronicleQueue chronicle, int lastSegment, IntPredicate whole) {
        List<Integer> written = new ArrayList<>();
        if (chronicle.firstCycle() >= lastSegment) {
            return written;
        }
        // Chronicle wants both bounds to be files it lists.
        for (long cycle : chronicle.listCyclesBetween(chronicle.firstCycle(), chronicle.lastCycle())) {
            int segment = (int) cycle;
            if (segment >= lastSegment || !whole.test(segment)) {
                continue;
            }
            SingleChronicleQueueStore store = chronicle.storeForCycle(segment, chronicle.epoch(), false, null);
            if (store == null) {
                continue;
            }
            try {
                MappedBytes bytes = store.bytes();
                try {
                    if (store.writeEOF(chronicle.wireType().apply(bytes), TIMEOUT_MS)) {
                        written.add(segment);
                    }
                } finally {
                    bytes.releaseLast();
                }
            } finally {
                chronicle.closeStore(store);
            }
        }
        return written;
    }
}
