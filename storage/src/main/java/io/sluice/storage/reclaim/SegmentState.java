package io.sluice.storage.reclaim;

/**
 * What the reclaim decision needs to know of one segment.
 *
 * @param segment         segment number
 * @param messageCount    records in the segment
 * @param unackedMessages of which not yet acknowledged (relocated-away slots count as acknowledged)
 * @param bytes           record bytes in the segment
 */
public record SegmentState(int segment, long messageCount, long unackedMessages, long bytes) {
}
