package io.sluice.storage;

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
        long relocatedMessages) {
}
