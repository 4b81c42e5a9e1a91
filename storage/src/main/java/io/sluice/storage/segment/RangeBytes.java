package io.sluice.storage.segment;

import io.sluice.storage.ack.AckStateReader;
import net.openhft.chronicle.queue.ExcerptTailer;
import net.openhft.chronicle.wire.DocumentContext;

import java.util.Arrays;
import java.util.Map;
import java.util.function.LongUnaryOperator;

/**
 * The message bytes (headers plus payload, the unit of the broker's byte quotas) of the unacknowledged records of a
 * range of ids, less some kept ones: what acknowledging that range takes off a queue's backlog. A cluster node
 * acknowledges a purge's ranges so (docs/replication.md, R7), and must know what they held without a step per message
 * in the common case, where a purge takes nearly all of each segment it touches.
 *
 * <p>So, per segment, it reads whichever is smaller: the records it counts, or the segment's others (then the segment's
 * tally, whose message bytes appends keep, less theirs). Runs of consecutive records are read in one pass each, from
 * the bitmaps' runs; a segment whose tally does not know its bytes (sealed before this process, never read whole) is
 * read the first way. Slots are physical: meant for a store that relocates nothing, as a cluster node's.
 *
 * <p>Threads: under the owner's lock, as the {@link SegmentLog} it reads.
 */
public final class RangeBytes {
    private RangeBytes() {
    }

    /**
     * Message bytes of the unacknowledged records with ids in {@code [fromId, toIdInclusive]}, except those in
     * {@code keep} (ascending).
     */
    public static long unackedBytes(SegmentLog log, AckStateReader acks, long fromId, long toIdInclusive, long[] keep) {
        if (toIdInclusive < fromId) {
            return 0;
        }
        int fromSegment = SegmentRollCycle.INSTANCE.toCycle(fromId);
        int toSegment = SegmentRollCycle.INSTANCE.toCycle(toIdInclusive);
        long bytes = 0;
        try (ExcerptTailer tailer = log.newTailer()) {
            for (Map.Entry<Integer, SegmentTally> entry : log.tallies().subMap(fromSegment, true, toSegment, true).entrySet()) {
                int segment = entry.getKey();
                SegmentTally tally = entry.getValue();
                long messages = Math.min(tally.messages, acks.messageCount(segment));
                if (messages == 0) {
                    continue;
                }
                long first = SegmentRollCycle.INSTANCE.toIndex(segment, 0);
                long last = first + messages - 1;
                long lo = Math.max(fromId, first);
                long hi = Math.min(toIdInclusive, last);
                if (lo > hi) {
                    continue;
                }
                long counted = acks.unackedCount(lo, hi) - overUnackedKept(acks, keep, lo, hi, id -> 1);
                if (counted == 0) {
                    continue;
                }
                if (tally.messageBytes >= 0 && tally.messages == messages && messages - counted < counted) {
                    bytes += tally.messageBytes - othersBytes(tailer, acks, keep, first, last, lo, hi);
                } else {
                    bytes += countedBytes(tailer, acks, keep, last, lo, hi);
                }
            }
        }
        return bytes;
    }

    /** The sum of {@code each} over the unacknowledged ids of {@code keep} in {@code [lo, hi]}. */
    private static long overUnackedKept(AckStateReader acks, long[] keep, long lo, long hi, LongUnaryOperator each) {
        long sum = 0;
        for (int i = firstAtOrAbove(keep, lo); i < keep.length && keep[i] <= hi; i++) {
            if (!acks.isSlotAcked(keep[i])) {
                sum += each.applyAsLong(keep[i]);
            }
        }
        return sum;
    }

    /** The bytes of the unacknowledged records of {@code [lo, hi]} (one segment's, whose last record is {@code last}) not kept. */
    private static long countedBytes(ExcerptTailer tailer, AckStateReader acks, long[] keep, long last, long lo, long hi) {
        return overRuns(acks, false, last, lo, hi, (runFrom, to) -> {
            long bytes = 0;
            long from = runFrom;
            for (int i = firstAtOrAbove(keep, from); i < keep.length && keep[i] <= to; i++) {
                if (keep[i] > from) {
                    bytes += recordBytes(tailer, from, keep[i] - 1);
                }
                from = keep[i] + 1;
            }
            return from <= to ? bytes + recordBytes(tailer, from, to) : bytes;
        });
    }

    /**
     * The bytes of one segment's records ({@code first} to {@code last}) that {@link #countedBytes} would not count for
     * {@code [lo, hi]}: those outside it, the acknowledged ones in it, and the unacknowledged kept ones.
     */
    private static long othersBytes(ExcerptTailer tailer, AckStateReader acks, long[] keep, long first, long last, long lo, long hi) {
        long bytes = 0;
        if (lo > first) {
            bytes += recordBytes(tailer, first, lo - 1);
        }
        if (hi < last) {
            bytes += recordBytes(tailer, hi + 1, last);
        }
        bytes += overRuns(acks, true, last, lo, hi, (from, to) -> recordBytes(tailer, from, to));
        return bytes + overUnackedKept(acks, keep, lo, hi, id -> recordBytes(tailer, id, id));
    }

    /**
     * The sum of {@code each} over the runs of consecutive acknowledged ({@code acked}) or unacknowledged slots in
     * {@code [lo, hi]}, of one segment whose last slot is {@code last}: found a bitmap word at a time.
     */
    private static long overRuns(AckStateReader acks, boolean acked, long last, long lo, long hi, RunBytes each) {
        long sum = 0;
        long at = lo;
        while (at <= hi) {
            long from = acked ? acks.nextAckedInSegment(at) : acks.nextUnackedId(at);
            if (from < 0 || from > hi) {
                break;
            }
            long end = acked ? acks.nextUnackedId(from) : acks.nextAckedInSegment(from);
            long to = Math.min(hi, end < 0 || end > last ? last : end - 1);
            sum += each.bytes(from, to);
            at = to + 1;
        }
        return sum;
    }

    /** What a run of slots {@code from} to {@code to} counts for. */
    private interface RunBytes {
        long bytes(long from, long to);
    }

    /** The message bytes of the records {@code fromId} to {@code toIdInclusive} of one segment, read in one pass. */
    private static long recordBytes(ExcerptTailer tailer, long fromId, long toIdInclusive) {
        if (!tailer.moveToIndex(fromId)) {
            return 0;
        }
        long bytes = 0;
        while (true) {
            try (DocumentContext dc = tailer.readingDocument()) {
                if (!dc.isPresent() || dc.index() > toIdInclusive) {
                    return bytes;
                }
                bytes += Math.max(0, dc.wire().bytes().readRemaining() - RecordCodec.HEADER_BYTES);
            }
        }
    }

    private static int firstAtOrAbove(long[] sorted, long id) {
        int i = Arrays.binarySearch(sorted, id);
        return i >= 0 ? i : -i - 1;
    }
}
