package io.sluice.storage.ack;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * A queue's ack state over all live segments, in memory. Not thread-safe: the queue's lock guards
 * every call. {@link AckLog} wraps it to make changes durable; on its own it persists nothing.
 *
 * <p><b>What it owns.</b> One {@link SegmentAckBitmap} per live segment (about one bit per message,
 * never an object per message, and no cap on the number of ack holes); the highest segment ever
 * reported; a sparse delivery-count map; a sparse relocation map in both directions.
 *
 * <p><b>Why a {@link TreeMap} keyed by segment.</b> Segments are Chronicle cycle numbers: mostly
 * contiguous, but a cycle with no messages leaves a gap, and reclaim removes segments from the middle
 * as well as the front when a straggler holds an old one. A sorted map handles gaps and holes without
 * empty slots, gives {@code ceiling}/{@code subMap} for cross-segment scans, and costs one entry per
 * segment (hundreds, not millions). A one-entry cache makes the common lookup — the segment being
 * acked right now — O(1).
 *
 * <p><b>Rules.</b>
 * <ol>
 *   <li>R1 An id whose segment is not live but at or below the highest known segment belongs to a
 *       reclaimed segment and counts as acknowledged; an id above it, or at or beyond its segment's
 *       message count, is unknown.</li>
 *   <li>R2 Relocation: a straggler copied forward to slot {@code newId} so that its old segment can be
 *       reclaimed. The old slot is marked acknowledged (it no longer holds a live message), the new
 *       slot stays live, and {@code originalId → newId} is remembered. Either name acknowledges the
 *       message; acknowledging drops the mapping. Relocations are rare, so the few scans over the
 *       relocation map below (per range ack while the map is non-empty) stay cheap.</li>
 *   <li>R3 A range ack covers every existing physical slot in the range, plus every relocated
 *       message whose original id is in the range.</li>
 *   <li>R4 Delivery counts are keyed by the original id and dropped when the message is acknowledged.</li>
 * </ol>
 */
public final class AckTracker implements AckStateReader {
    private static final long SEQ_MASK = 0xFFFF_FFFFL;

    private final TreeMap<Integer, SegmentAckBitmap> segments = new TreeMap<>();
    private final LongIntHashMap deliveries = new LongIntHashMap();
    private final LongLongHashMap relocatedTo = new LongLongHashMap();
    private final LongLongHashMap relocatedFrom = new LongLongHashMap();
    /**
     * Replay only: relocations into a segment that is neither on disk nor known to have existed, by that
     * segment. A SEGMENT_RECLAIMED record later in the journal applies them; otherwise the copy's
     * segment never reached the disk and they are dropped at the end ({@link #dropDeferredRelocations}).
     */
    private final Map<Integer, List<long[]>> deferredRelocations = new HashMap<>();
    private int highestKnownSegment = -1;
    private long unackedTotal;
    private int cachedSegment = -1;
    private SegmentAckBitmap cachedBitmap;

    public static long id(int segment, long seq) {
        return ((long) segment << 32) | seq;
    }

    public static int segmentOf(long id) {
        return (int) (id >>> 32);
    }

    public static long seqOf(long id) {
        return id & SEQ_MASK;
    }

    /**
     * The segment now holds {@code messageCount} messages. A new segment must be above every segment
     * reported before (segments are created in increasing order).
     */
    public void segmentGrew(int segment, long messageCount) {
        checkSegment(segment);
        SegmentAckBitmap bitmap = bitmap(segment);
        if (bitmap != null) {
            long before = bitmap.messageCount();
            bitmap.extendTo(messageCount);
            unackedTotal += messageCount - before;
        } else if (segment > highestKnownSegment) {
            bitmap = new SegmentAckBitmap();
            bitmap.extendTo(messageCount);
            segments.put(segment, bitmap);
            highestKnownSegment = segment;
            unackedTotal += messageCount;
        } else {
            throw new IllegalArgumentException("segment " + segment + " is not live and not above the highest known segment "
                    + highestKnownSegment + ": it was reclaimed, or reported out of order");
        }
    }

    /** Acknowledges one message by either of its names (R2). */
    public AckResult ack(long id) {
        checkId(id);
        long target = relocatedTo.get(id, -1);
        if (target >= 0) {
            return ackSlot(id, target);
        }
        long original = relocatedFrom.get(id, -1);
        return ackSlot(original >= 0 ? original : id, id);
    }

    /**
     * Acknowledges every existing message in {@code [fromId, toIdInclusive]} (R3), across segments.
     *
     * @return how many messages were newly acknowledged
     */
    public long ackRange(long fromId, long toIdInclusive) {
        checkId(fromId);
        checkId(toIdInclusive);
        if (toIdInclusive < fromId) {
            throw new IllegalArgumentException("range end " + toIdInclusive + " is below range start " + fromId);
        }
        long newly = 0;
        if (relocatedTo.size() > 0) {
            newly += ackRelocatedInRange(fromId, toIdInclusive);
        }
        int fromSegment = segmentOf(fromId);
        int toSegment = segmentOf(toIdInclusive);
        for (Map.Entry<Integer, SegmentAckBitmap> entry : segments.subMap(fromSegment, true, toSegment, true).entrySet()) {
            int segment = entry.getKey();
            SegmentAckBitmap bitmap = entry.getValue();
            long last = bitmap.messageCount() - 1;
            long from = segment == fromSegment ? seqOf(fromId) : 0;
            long to = segment == toSegment ? Math.min(seqOf(toIdInclusive), last) : last;
            if (from > to) {
                continue;
            }
            long acked = bitmap.ackRange(from, to);
            newly += acked;
            unackedTotal -= acked;
            dropDeliveries(id(segment, from), id(segment, to));
        }
        return newly;
    }

    /**
     * The highest id a message can have right now, or -1. {@link AckLog} journals range ends clamped
     * to it: replay runs when segments have grown, and must not acknowledge messages appended after
     * the ack.
     */
    long highestAssignedId() {
        if (highestKnownSegment < 0) {
            return -1;
        }
        SegmentAckBitmap top = bitmap(highestKnownSegment);
        if (top == null) {
            return id(highestKnownSegment, SEQ_MASK);
        }
        return id(highestKnownSegment, 0) + top.messageCount() - 1;
    }

    /**
     * Records that the message was delivered {@code deliveryCount} times so far (R4).
     *
     * @return false, recording nothing, when the message is unknown or already acknowledged
     */
    public boolean recordDelivery(long id, int deliveryCount) {
        checkId(id);
        if (deliveryCount < 1) {
            throw new IllegalArgumentException("deliveryCount " + deliveryCount + " for message " + id + " is below 1");
        }
        long original = originalName(id);
        long physical = physicalId(original);
        if (!isLiveUnacked(physical)) {
            return false;
        }
        deliveries.put(original, deliveryCount);
        return true;
    }

    /**
     * Records that the message known as {@code originalId} was copied to slot {@code newId} (R2).
     *
     * @throws IllegalArgumentException if the message is not live and unacknowledged, or the new slot
     *     is not a live, unacknowledged slot that holds no other relocated message
     */
    public void relocate(long originalId, long newId) {
        checkId(originalId);
        checkId(newId);
        long original = originalName(originalId);
        long current = physicalId(original);
        if (!isLiveUnacked(current)) {
            throw new IllegalArgumentException("message " + describe(originalId) + " is not live and unacknowledged, so it cannot be relocated");
        }
        if (newId == current || !isLiveUnacked(newId) || relocatedFrom.containsKey(newId)) {
            throw new IllegalArgumentException("slot " + describe(newId) + " cannot receive message " + describe(originalId)
                    + ": it must be a different live, unacknowledged slot not already holding a relocated message");
        }
        bitmap(segmentOf(current)).ack(seqOf(current));
        unackedTotal--;
        if (current != original) {
            relocatedFrom.remove(current);
        }
        relocatedTo.put(original, newId);
        relocatedFrom.put(newId, original);
    }

    /**
     * Recovery of a copy whose relocation record was lost (R2a): the message known as
     * {@code originalId} has no live slot any more (its segment was reclaimed), but slot {@code copyId}
     * holds a copy of it, so the copy becomes the message. Either name then acknowledges it (R2).
     *
     * @throws IllegalArgumentException if the message still has a live slot (the copy must be
     *     discarded instead), or the copy's slot is not live and unacknowledged, or holds another message
     */
    public void adopt(long originalId, long copyId) {
        checkId(originalId);
        checkId(copyId);
        long current = physicalId(originalId);
        if (isLiveUnacked(current)) {
            throw new IllegalArgumentException("message " + describe(originalId) + " is still live at " + describe(current)
                    + ", so the copy at " + describe(copyId) + " must be discarded, not adopted");
        }
        if (!isLiveUnacked(copyId) || relocatedFrom.containsKey(copyId)) {
            throw new IllegalArgumentException("slot " + describe(copyId) + " cannot be adopted for message " + describe(originalId)
                    + ": it must be a live, unacknowledged slot not already holding a relocated message");
        }
        if (current != originalId) {
            relocatedFrom.remove(current);
        }
        relocatedTo.put(originalId, copyId);
        relocatedFrom.put(copyId, originalId);
    }

    /**
     * Forgets a fully acknowledged segment after the store reclaimed its file. Ids in it then count as
     * acknowledged (R1).
     *
     * @throws IllegalStateException if it still holds unacknowledged messages
     */
    public void removeSegment(int segment) {
        SegmentAckBitmap bitmap = bitmap(segment);
        if (bitmap == null) {
            throw new IllegalArgumentException("segment " + segment + " is not live (live segments: " + segments.keySet() + ")");
        }
        if (bitmap.unackedCount() > 0) {
            throw new IllegalStateException("segment " + segment + " still has " + bitmap.unackedCount()
                    + " unacknowledged messages of " + bitmap.messageCount() + "; relocate them before reclaiming");
        }
        segments.remove(segment);
        invalidateCache();
    }

    @Override
    public boolean isAcked(long id) {
        checkId(id);
        long physical = physicalId(id);
        SegmentAckBitmap bitmap = bitmap(segmentOf(physical));
        if (bitmap == null) {
            return segmentOf(physical) <= highestKnownSegment;
        }
        long seq = seqOf(physical);
        return seq < bitmap.messageCount() && bitmap.isAcked(seq);
    }

    @Override
    public boolean isSlotAcked(long physicalId) {
        checkId(physicalId);
        SegmentAckBitmap bitmap = bitmap(segmentOf(physicalId));
        if (bitmap == null) {
            return segmentOf(physicalId) <= highestKnownSegment;
        }
        long seq = seqOf(physicalId);
        return seq < bitmap.messageCount() && bitmap.isAcked(seq);
    }

    @Override
    public long unackedCount() {
        return unackedTotal;
    }

    @Override
    public long firstUnackedId() {
        for (Map.Entry<Integer, SegmentAckBitmap> entry : segments.entrySet()) {
            long seq = entry.getValue().firstUnacked();
            if (seq >= 0) {
                return id(entry.getKey(), seq);
            }
        }
        return -1;
    }

    @Override
    public long nextUnackedId(long fromId) {
        checkId(fromId);
        int fromSegment = segmentOf(fromId);
        // The segment of fromId first, without a view of the map: a walk over every unacknowledged id (a purge) calls
        // this once a message, and the tail map's view and iterator were three objects a call.
        SegmentAckBitmap same = segments.get(fromSegment);
        if (same != null) {
            long seq = same.nextUnacked(seqOf(fromId));
            if (seq >= 0) {
                return id(fromSegment, seq);
            }
        }
        for (Map.Entry<Integer, SegmentAckBitmap> entry : segments.tailMap(fromSegment, false).entrySet()) {
            long seq = entry.getValue().firstUnacked();
            if (seq >= 0) {
                return id(entry.getKey(), seq);
            }
        }
        return -1;
    }

    @Override
    public long nextAckedInSegment(long fromId) {
        checkId(fromId);
        SegmentAckBitmap bitmap = segments.get(segmentOf(fromId));
        long seq = bitmap == null ? -1 : bitmap.nextAcked(seqOf(fromId));
        return seq < 0 ? -1 : id(segmentOf(fromId), seq);
    }

    @Override
    public long unackedCount(long fromId, long toIdInclusive) {
        checkId(fromId);
        checkId(toIdInclusive);
        long unacked = 0;
        int fromSegment = segmentOf(fromId);
        int toSegment = segmentOf(toIdInclusive);
        for (Map.Entry<Integer, SegmentAckBitmap> entry : segments.subMap(fromSegment, true, toSegment, true).entrySet()) {
            SegmentAckBitmap bitmap = entry.getValue();
            long from = entry.getKey() == fromSegment ? seqOf(fromId) : 0;
            long to = entry.getKey() == toSegment ? Math.min(seqOf(toIdInclusive), bitmap.messageCount() - 1) : bitmap.messageCount() - 1;
            if (from <= to) {
                unacked += bitmap.unackedCount(from, to);
            }
        }
        return unacked;
    }

    @Override
    public int[] fullyAckedSegments() {
        List<Integer> result = new ArrayList<>();
        segments.forEach((segment, bitmap) -> {
            if (bitmap.isFullyAcked()) {
                result.add(segment);
            }
        });
        return result.stream().mapToInt(Integer::intValue).toArray();
    }

    @Override
    public int[] liveSegments() {
        return segments.keySet().stream().mapToInt(Integer::intValue).toArray();
    }

    @Override
    public int highestKnownSegment() {
        return highestKnownSegment;
    }

    @Override
    public long messageCount(int segment) {
        SegmentAckBitmap bitmap = bitmap(segment);
        return bitmap == null ? 0 : bitmap.messageCount();
    }

    @Override
    public long unackedCount(int segment) {
        SegmentAckBitmap bitmap = bitmap(segment);
        return bitmap == null ? 0 : bitmap.unackedCount();
    }

    @Override
    public int deliveryCount(long id) {
        return deliveries.get(originalName(id), 0);
    }

    @Override
    public long physicalId(long originalId) {
        return relocatedTo.get(originalId, originalId);
    }

    @Override
    public boolean isRelocated(long originalId) {
        return relocatedTo.containsKey(originalId);
    }

    @Override
    public long oldestUnacked(java.util.function.LongPredicate skip, int maxSkips) {
        long oldest = -1;
        int skipped = 0;
        for (long slot = firstUnackedId(); slot >= 0; slot = nextUnackedId(slot + 1)) {
            long id = originalId(slot);
            if (id != slot) {
                continue; // a relocated copy: weighed below, by its original id
            }
            if (!skip.test(id)) {
                oldest = id; // every later slot not relocated has a larger id
                break;
            }
            if (++skipped > maxSkips) {
                return -1;
            }
        }
        long[] relocated = {-1};
        relocatedTo.forEach((original, target) -> {
            if ((relocated[0] < 0 || original < relocated[0]) && !skip.test(original)) {
                relocated[0] = original;
            }
        });
        return relocated[0] >= 0 && (oldest < 0 || relocated[0] < oldest) ? relocated[0] : oldest;
    }

    /** Number of delivery counts held: for tests and metrics. */
    public int deliveryEntryCount() {
        return deliveries.size();
    }

    @Override
    public long originalId(long physicalId) {
        return relocatedFrom.get(physicalId, physicalId);
    }

    /** Number of relocated messages not yet acknowledged: for tests and metrics. */
    public int relocationEntryCount() {
        return relocatedTo.size();
    }

    // ---- Used by AckCheckpoint and AckLog recovery only ----

    NavigableMap<Integer, SegmentAckBitmap> segmentsForCheckpoint() {
        return segments;
    }

    void forEachDelivery(LongIntHashMap.Visitor visitor) {
        deliveries.forEach(visitor);
    }

    void forEachRelocation(LongLongHashMap.Visitor visitor) {
        relocatedTo.forEach(visitor);
    }

    void restoreSegment(int segment, SegmentAckBitmap bitmap) {
        checkSegment(segment);
        segments.put(segment, bitmap);
        unackedTotal += bitmap.unackedCount();
        highestKnownSegment = Math.max(highestKnownSegment, segment);
        invalidateCache();
    }

    void restoreHighestKnownSegment(int segment) {
        highestKnownSegment = Math.max(highestKnownSegment, segment);
    }

    void restoreDelivery(long id, int count) {
        deliveries.put(id, count);
    }

    void restoreRelocation(long originalId, long newId) {
        relocatedTo.put(originalId, newId);
        relocatedFrom.put(newId, originalId);
    }

    /**
     * Replay of a delivery record: kept even when the message's segment is not live now, because a
     * later record may relocate the message out of a segment that was reclaimed before the crash and
     * so was never reported. {@link #dropDanglingAfterReplay()} removes what stays dangling.
     */
    void replayDelivery(long id, int deliveryCount) {
        deliveries.put(originalName(id), deliveryCount);
    }

    /**
     * Replay of a relocation record. As {@link #relocate} when both slots are in live segments.
     * When either is in a segment that is not live — reclaimed later in the journal, so never
     * reported by the store — the record is taken as given: the old slot (if live) is acknowledged and
     * the mapping kept; {@link #dropDanglingAfterReplay()} then removes mappings to slots that are gone.
     *
     * @return false if the record does not apply because the copy's slot, in a live segment, was lost
     *     or is not free
     */
    boolean replayRelocation(long originalId, long newId) {
        long original = originalName(originalId);
        long current = physicalId(original);
        SegmentAckBitmap currentBitmap = bitmap(segmentOf(current));
        SegmentAckBitmap targetBitmap = bitmap(segmentOf(newId));
        if (currentBitmap != null && targetBitmap != null) {
            try {
                relocate(originalId, newId);
                return true;
            } catch (IllegalArgumentException e) {
                return false;
            }
        }
        if (targetBitmap != null && (!isLiveUnacked(newId) || relocatedFrom.containsKey(newId))) {
            return false;
        }
        if (targetBitmap == null && segmentOf(newId) > highestKnownSegment) {
            // Reclaimed later in this journal, or never on disk: applying it now would acknowledge the
            // original, and if the copy's segment was lost with the crash, the message with it.
            deferredRelocations.computeIfAbsent(segmentOf(newId), s -> new ArrayList<>()).add(new long[] {originalId, newId});
            return true;
        }
        if (currentBitmap != null && seqOf(current) < currentBitmap.messageCount() && currentBitmap.ack(seqOf(current))) {
            unackedTotal--;
        }
        if (current != original) {
            relocatedFrom.remove(current);
        }
        relocatedTo.put(original, newId);
        relocatedFrom.put(newId, original);
        return true;
    }

    /**
     * Recovery, before replay: the copy at {@code lostCopy} that holds {@code originalId} is not on disk, so the
     * message goes back to {@code holder}, the slot it was relocated from, whose record is (its original, or an earlier
     * copy): that slot is unacknowledged again and names the message (rule "a lost copy gives its message back",
     * {@link LostCopies}). A delivery count stays with the message's name.
     */
    void restoreHolder(long originalId, long lostCopy, long holder) {
        relocatedTo.remove(originalId);
        relocatedFrom.remove(lostCopy);
        if (holder != originalId) {
            relocatedTo.put(originalId, holder);
            relocatedFrom.put(holder, originalId);
        }
        SegmentAckBitmap bitmap = bitmap(segmentOf(holder));
        if (bitmap != null && bitmap.unack(seqOf(holder))) {
            unackedTotal++;
        }
    }

    /** Replay met SEGMENT_RECLAIMED for {@code segment}: the relocations deferred into it happened. */
    void applyDeferredRelocations(int segment) {
        List<long[]> deferred = deferredRelocations.remove(segment);
        if (deferred != null) {
            for (long[] relocation : deferred) {
                replayRelocation(relocation[0], relocation[1]);
            }
        }
    }

    /**
     * End of replay: relocations still deferred went to a segment that never reached the disk; the
     * originals stay the messages. Returns how many were dropped.
     */
    int dropDeferredRelocations() {
        int dropped = 0;
        for (List<long[]> deferred : deferredRelocations.values()) {
            dropped += deferred.size();
        }
        deferredRelocations.clear();
        return dropped;
    }

    /** After replay: restores the invariant that delivery counts and relocations exist only for live, unacknowledged messages. */
    void dropDanglingAfterReplay() {
        List<long[]> pairs = new ArrayList<>();
        relocatedTo.forEach((original, target) -> {
            if (!isLiveUnacked(target)) {
                pairs.add(new long[] {original, target});
            }
        });
        for (long[] pair : pairs) {
            relocatedTo.remove(pair[0]);
            relocatedFrom.remove(pair[1]);
        }
        List<Long> keys = new ArrayList<>();
        deliveries.forEach((id, count) -> {
            if (!isLiveUnacked(physicalId(id))) {
                keys.add(id);
            }
        });
        keys.forEach(deliveries::remove);
    }

    boolean isLive(int segment) {
        return bitmap(segment) != null;
    }

    /** True when {@code physical} is an existing slot that is not acknowledged. */
    boolean isLiveUnacked(long physical) {
        SegmentAckBitmap bitmap = bitmap(segmentOf(physical));
        long seq = seqOf(physical);
        return bitmap != null && seq < bitmap.messageCount() && !bitmap.isAcked(seq);
    }

    /**
     * Recovery: the segment file holds {@code messageCount} messages, which may be fewer than the
     * checkpoint saw after a machine crash. State about lost messages is dropped.
     */
    void resetMessageCount(int segment, long messageCount) {
        SegmentAckBitmap bitmap = bitmap(segment);
        long before = bitmap.unackedCount();
        long oldCount = bitmap.messageCount();
        bitmap.truncateTo(messageCount);
        unackedTotal += bitmap.unackedCount() - before;
        if (messageCount < oldCount) {
            dropStateForSlots(id(segment, messageCount), id(segment, oldCount - 1));
        }
    }

    /**
     * Recovery, before and during replay: makes a segment not live but keeps relocations and delivery
     * counts naming its slots, because later journal records may still move those messages on;
     * {@link #dropDanglingAfterReplay()} removes whatever is left dangling once replay ends.
     */
    void dropSegmentForReplay(int segment) {
        SegmentAckBitmap bitmap = segments.remove(segment);
        invalidateCache();
        if (bitmap != null) {
            unackedTotal -= bitmap.unackedCount();
        }
    }

    private void dropStateForSlots(long fromId, long toId) {
        List<long[]> pairs = new ArrayList<>();
        relocatedFrom.forEach((target, original) -> {
            if (target >= fromId && target <= toId) {
                pairs.add(new long[] {original, target});
            }
        });
        for (long[] pair : pairs) {
            relocatedTo.remove(pair[0]);
            relocatedFrom.remove(pair[1]);
            deliveries.remove(pair[0]);
        }
        List<Long> keys = new ArrayList<>();
        deliveries.forEach((id, count) -> {
            if (id >= fromId && id <= toId && !relocatedTo.containsKey(id)) {
                keys.add(id);
            }
        });
        keys.forEach(deliveries::remove);
    }

    private long ackRelocatedInRange(long fromId, long toId) {
        List<long[]> pairs = new ArrayList<>();
        relocatedTo.forEach((original, target) -> {
            if ((original >= fromId && original <= toId) || (target >= fromId && target <= toId)) {
                pairs.add(new long[] {original, target});
            }
        });
        long newly = 0;
        for (long[] pair : pairs) {
            if (ackSlot(pair[0], pair[1]) == AckResult.NEWLY_ACKED) {
                newly++;
            }
        }
        return newly;
    }

    private AckResult ackSlot(long original, long physical) {
        int segment = segmentOf(physical);
        SegmentAckBitmap bitmap = bitmap(segment);
        if (bitmap == null) {
            return segment <= highestKnownSegment ? AckResult.ALREADY_ACKED : AckResult.UNKNOWN;
        }
        long seq = seqOf(physical);
        if (seq >= bitmap.messageCount()) {
            return AckResult.UNKNOWN;
        }
        if (!bitmap.ack(seq)) {
            return AckResult.ALREADY_ACKED;
        }
        unackedTotal--;
        deliveries.remove(original);
        if (original != physical) {
            relocatedTo.remove(original);
            relocatedFrom.remove(physical);
        }
        return AckResult.NEWLY_ACKED;
    }

    /** Drops delivery counts of ids in one segment's range, probing id by id or scanning, whichever is less work. */
    private void dropDeliveries(long fromId, long toId) {
        if (deliveries.size() == 0) {
            return;
        }
        if (toId - fromId < deliveries.capacity()) {
            for (long id = fromId; id <= toId; id++) {
                deliveries.remove(id);
            }
        } else {
            deliveries.removeRange(fromId, toId);
        }
    }

    private long originalName(long id) {
        long original = relocatedFrom.get(id, -1);
        return original >= 0 ? original : id;
    }

    private SegmentAckBitmap bitmap(int segment) {
        if (segment == cachedSegment && cachedBitmap != null) {
            return cachedBitmap;
        }
        SegmentAckBitmap bitmap = segments.get(segment);
        if (bitmap != null) {
            cachedSegment = segment;
            cachedBitmap = bitmap;
        }
        return bitmap;
    }

    private void invalidateCache() {
        cachedSegment = -1;
        cachedBitmap = null;
    }

    private static String describe(long id) {
        return id + " (segment " + segmentOf(id) + ", seq " + seqOf(id) + ")";
    }

    private static void checkSegment(int segment) {
        if (segment < 0) {
            throw new IllegalArgumentException("segment " + segment + " is negative");
        }
    }

    private static void checkId(long id) {
        if (id < 0) {
            throw new IllegalArgumentException("message id " + id + " is negative");
        }
    }
}
