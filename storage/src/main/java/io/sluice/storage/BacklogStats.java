package io.sluice.storage;

import io.sluice.storage.ack.AckStateReader;
import io.sluice.storage.reclaim.Reclaimer;
import io.sluice.storage.segment.SegmentRollCycle;
import io.sluice.storage.segment.SegmentTally;

import java.util.Map;
import java.util.NavigableMap;

/**
 * A snapshot of one queue's backlog, cheap to take at any time (every figure is maintained
 * incrementally, none is computed by scanning).
 *
 * @param unackedMessages   messages stored and not yet acknowledged
 * @param unackedBytes      their size in bytes; exact for segments that are wholly unacknowledged,
 *                          estimated pro rata for a segment that is partly acknowledged
 * @param diskBytes         bytes of records in the segments still on disk
 * @param segments          segments on disk
 * @param pinnedBytes       bytes of the segments from the oldest one up to the segment holding the
 *                          oldest unacknowledged message, i.e. what that message keeps on disk
 * @param appendedMessages  messages appended since the store was opened
 * @param reclaimedSegments segments deleted since the store was opened
 * @param reclaimedBytes    record bytes of those segments
 * @param relocatedMessages stragglers moved forward since the store was opened
 * @param failedReclaimPasses reclaim passes that failed (threw) since the store was opened; each is tried again
 */
public record BacklogStats(
        long unackedMessages,
        long unackedBytes,
        long diskBytes,
        int segments,
        long pinnedBytes,
        long appendedMessages,
        long reclaimedSegments,
        long reclaimedBytes,
        long relocatedMessages,
        long failedReclaimPasses) {

    /**
     * The figures of a queue from its segments' tallies and its ack state, O(segments); the caller
     * holds the queue's lock.
     */
    static BacklogStats of(NavigableMap<Integer, SegmentTally> tallies,
                           AckStateReader acks, long appendedMessages,
                           Reclaimer reclaimer) {
        long unackedBytes = 0;
        long diskBytes = 0;
        long pinnedBytes = 0;
        long firstUnacked = acks.firstUnackedId();
        int pinSegment = firstUnacked < 0 ? -1 : SegmentRollCycle.INSTANCE.toCycle(firstUnacked);
        for (Map.Entry<Integer, SegmentTally> e : tallies.entrySet()) {
            SegmentTally t = e.getValue();
            diskBytes += t.bytes();
            if (t.messages() > 0) {
                long unacked = acks.unackedCount(e.getKey());
                unackedBytes += unacked == t.messages() ? t.bytes() : (long) ((double) t.bytes() * unacked / t.messages());
            }
            if (e.getKey() <= pinSegment) {
                pinnedBytes += t.bytes();
            }
        }
        return new BacklogStats(acks.unackedCount(), unackedBytes, diskBytes, tallies.size(), pinnedBytes,
                appendedMessages, reclaimer.reclaimedSegments(), reclaimer.reclaimedBytes(), reclaimer.relocatedMessages(),
                reclaimer.failedPasses());
    }
}
