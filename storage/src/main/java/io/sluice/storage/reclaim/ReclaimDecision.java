package io.sluice.storage.reclaim;

/**
 * One action the reclaimer should take on a segment.
 *
 * @param segment the segment
 * @param action  what to do with it
 */
public record ReclaimDecision(int segment, Action action) {
    public enum Action {
        /** Every message is acknowledged: delete the file. */
        DELETE,
        /** Only a few stragglers are left: copy them forward, then the segment becomes deletable. */
        RELOCATE
    }
}
