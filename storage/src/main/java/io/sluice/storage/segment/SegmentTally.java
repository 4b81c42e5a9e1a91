package io.sluice.storage.segment;

/**
 * What the store knows of one segment on disk without reading it: how many records it holds, how many
 * bytes they take, and when this process sealed it. Guarded by the owning queue's lock.
 */
public final class SegmentTally {
    /** {@link #sealedAtNanos} of a segment sealed before the store was opened (or not sealed yet). */
    public static final long SEALED_BEFORE_OPEN = Long.MIN_VALUE;

    long messages;
    long bytes;
    /**
     * Message bytes of every record in the segment (each record's length less the record header), or -1 when not
     * known: kept by appends for a segment this process began, or read from the segment's {@link SegmentTallyFile}.
     */
    long messageBytes = -1;
    /** Records a transaction staged in the segment; meaningful when {@link #messageBytes} is known. */
    long stagedRecords;
    /** When this process sealed the segment (System.nanoTime), for reclaim's rule R3. */
    long sealedAtNanos = SEALED_BEFORE_OPEN;

    SegmentTally(long messages, long bytes) {
        this.messages = messages;
        this.bytes = bytes;
    }

    /** The tally of a segment this process begins: every record of it will pass through {@link SegmentLog#append}. */
    static SegmentTally begun(int segment) {
        SegmentTally tally = new SegmentTally(0, 0);
        tally.messageBytes = 0;
        return tally;
    }

    /** Records in the segment (Chronicle's sequence of the last one, plus one). */
    public long messages() {
        return messages;
    }

    /** Bytes of the segment's records (at recovery: Chronicle's write position, index included). */
    public long bytes() {
        return bytes;
    }

    /** When this process sealed the segment (System.nanoTime), or {@link #SEALED_BEFORE_OPEN}. */
    public long sealedAtNanos() {
        return sealedAtNanos;
    }
}
