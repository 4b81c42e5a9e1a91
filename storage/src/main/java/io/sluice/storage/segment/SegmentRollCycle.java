package io.sluice.storage.segment;

import net.openhft.chronicle.queue.RollCycle;
import net.openhft.chronicle.queue.rollcycles.RollCycleArithmetic;

/**
 * Chronicle's roll cycle, repurposed to make segments roll by size instead of by time.
 *
 * <p>Chronicle rolls to a new cycle file when its clock enters a new cycle. Sluice gives each queue a
 * {@link SegmentClock} that does not tell the time: it reports {@code segment * 1000} milliseconds,
 * and the store advances it when the current segment is full. So cycle number = segment number, and
 * the file of segment {@code n} is named after the instant {@code n} seconds past 1970-01-01T00:00Z
 * ({@code 19700101-000003.cq4} is segment 3). The names sort in segment order.
 *
 * <p>Index arithmetic: {@code index = segment << 32 | sequence}; a segment holds at most
 * {@link #maxMessagesPerCycle()} messages (4096² × 16 = 2^28), far above what a segment of at most
 * 1 GiB can hold with the 48-byte record header. Index spacing 16 keeps a random read by id cheap
 * (at most 15 records scanned after the index lookup).
 */
public final class SegmentRollCycle implements RollCycle {
    public static final SegmentRollCycle INSTANCE = new SegmentRollCycle();

    /** Logical milliseconds per segment: the clock reports segment × this. */
    public static final int MILLIS_PER_SEGMENT = 1000;
    static final String FORMAT = "yyyyMMdd-HHmmss";

    private final RollCycleArithmetic arithmetic = RollCycleArithmetic.of(4096, 16);

    private SegmentRollCycle() {
    }

    @Override
    public String format() {
        return FORMAT;
    }

    @Override
    public int lengthInMillis() {
        return MILLIS_PER_SEGMENT;
    }

    @Override
    public int defaultIndexCount() {
        return 4096;
    }

    @Override
    public int defaultIndexSpacing() {
        return 16;
    }

    @Override
    public long toIndex(int cycle, long sequenceNumber) {
        return arithmetic.toIndex(cycle, sequenceNumber);
    }

    @Override
    public long toSequenceNumber(long index) {
        return arithmetic.toSequenceNumber(index);
    }

    @Override
    public int toCycle(long index) {
        return arithmetic.toCycle(index);
    }

    @Override
    public long maxMessagesPerCycle() {
        return arithmetic.maxMessagesPerCycle();
    }
}
