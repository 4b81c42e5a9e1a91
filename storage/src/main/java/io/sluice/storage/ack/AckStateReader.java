package io.sluice.storage.ack;

import java.util.Arrays;

/**
 * Read-only view of a queue's ack state, so that the dispatcher can iterate unacknowledged messages
 * without a way to change the state behind the journal's back. Same threading rule as {@link
 * AckTracker}: call under the queue's lock.
 *
 * <p>A message id is {@code ((long) segment << 32) | seq}. A relocated message (see {@link
 * AckTracker}) has two names, its original id and its physical id; every method taking a message id
 * accepts either, while {@link #firstUnackedId()} and {@link #nextUnackedId(long)} walk physical slots
 * because that is what the segment store reads.
 */
public interface AckStateReader {
    /** True if the message is acknowledged, or lives in a reclaimed segment (below the live range). */
    boolean isAcked(long id);

    /**
     * True if the slot {@code physicalId} holds no live message: acknowledged, or emptied by a
     * relocation (whose message lives on in its copy), or in a reclaimed segment. What a reader
     * walking the segments must ask; {@link #isAcked} follows a relocated message to its copy.
     */
    boolean isSlotAcked(long physicalId);

    /** Unacknowledged slots over all live segments, in O(1). */
    long unackedCount();

    /** The lowest unacknowledged physical slot, or -1 if every message is acknowledged. */
    long firstUnackedId();

    /** The lowest unacknowledged physical slot at or after {@code fromId}, or -1. */
    long nextUnackedId(long fromId);

    /**
     * The lowest acknowledged physical slot at or after {@code fromId} in {@code fromId}'s segment, or -1: where a run of
     * unacknowledged slots that starts at {@code fromId} ends.
     */
    long nextAckedInSegment(long fromId);

    /** Unacknowledged physical slots in {@code [fromId, toIdInclusive]}, across segments, counted a bitmap word at a time. */
    long unackedCount(long fromId, long toIdInclusive);

    /** Live segments whose every message is acknowledged, in increasing order: reclaim candidates. */
    int[] fullyAckedSegments();

    /** Live segments in increasing order. */
    int[] liveSegments();

    /** Highest segment ever reported, live or reclaimed, or -1 when none was. */
    int highestKnownSegment();

    /** Messages of a live segment, or 0 when the segment is not live. */
    long messageCount(int segment);

    /** Unacknowledged messages of a live segment, or 0 when the segment is not live. */
    long unackedCount(int segment);

    /** How often the message was delivered, or 0 if never (or if it has been acknowledged). */
    int deliveryCount(long id);

    /** Where the message now lives: its relocated slot, or {@code originalId} itself. */
    long physicalId(long originalId);

    /** True if {@code originalId} was copied forward and that copy is not acknowledged yet. */
    boolean isRelocated(long originalId);

    /** The id a message was first stored under, given the slot it lives in now (the slot itself if never relocated). */
    long originalId(long physicalId);

    /**
     * The oldest unacknowledged message, by the id it was first stored under, that {@code skip} does
     * not reject; -1 if none, or if {@code maxSkips} were rejected first. Walks slots, so a relocated
     * copy (whose original id is older than its slot) cannot send the walk back; relocated copies are
     * weighed by their original id from the relocation map, which relocations keep small.
     */
    long oldestUnacked(java.util.function.LongPredicate skip, int maxSkips);

    /**
     * The id of every unacknowledged message, in slot order, each by the id it was first stored under: primitives in one
     * array, not a boxed id per message.
     */
    default long[] unackedOriginalIds() {
        long[] ids = new long[1024];
        int count = 0;
        for (long p = firstUnackedId(); p >= 0; p = nextUnackedId(p + 1)) {
            if (count == ids.length) {
                ids = Arrays.copyOf(ids, ids.length * 2);
            }
            ids[count++] = originalId(p);
        }
        return Arrays.copyOf(ids, count);
    }
}
