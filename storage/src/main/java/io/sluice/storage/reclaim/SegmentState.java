package io.sluice.storage.reclaim;

/**
 * What the reclaim decision needs to know of one segment.
 *
 * @param segment         segment number
 * @param messageCount    records in the segment
 * @param unackedMessages of which not yet acknowledged (relocated-away slots count as acknowledged)
 * @param bytes           record bytes in the segment
 * @param sealedForNanos  how long ago the segment was sealed: 0 for the one being written, {@link Long#MAX_VALUE}
 *                        for one sealed before the store was opened
 */
public record SegmentState(int segment, long messageCount, long unackedMessages, long bytes, long sealedForNanos) {
}
