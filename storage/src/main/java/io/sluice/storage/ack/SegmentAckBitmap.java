package io.sluice.storage.ack;

import java.util.Arrays;

/**
 * The acknowledged messages of one segment, one bit per message. Not thread-safe: the queue's lock
 * guards every call.
 *
 * <p>Sequences are dense within a segment (0, 1, 2, ... with no holes) and run up to
 * 2<sup>32</sup>-1, so they are {@code long} here rather than {@code int}. Bit {@code seq % 64} of
 * word {@code seq / 64} is set when message {@code seq} is acknowledged:
 *
 * <pre>
 *   words[0]                      words[1]
 *   bit 63 ........... bit 1 bit 0  bit 63 ........ bit 0
 *   seq 63 ........... seq 1 seq 0  seq 127 ....... seq 64
 * </pre>
 *
 * <p>Invariants: no bit at or above {@code messageCount} is ever set, so {@code ackedCount} is the
 * population count of {@code words}; every sequence below {@code firstUnackedHint} is acknowledged
 * (the hint only moves forward and is advanced lazily by {@link #firstUnacked()}).
 */
public final class SegmentAckBitmap {
    /** Sequences are 32-bit unsigned, so a segment holds at most 2^32 messages. */
    public static final long MAX_MESSAGE_COUNT = 1L << 32;

    private static final long[] NO_WORDS = new long[0];

    private long[] words = NO_WORDS;
    private long messageCount;
    private long ackedCount;
    private long firstUnackedHint;

    /** Rebuilds a bitmap from a checkpoint: {@code words} must have no bit at or above {@code messageCount}. */
    static SegmentAckBitmap restore(long messageCount, long[] words) {
        checkMessageCount(messageCount);
        if (words.length != wordsFor(messageCount)) {
            throw new IllegalArgumentException("bitmap of " + words.length + " words does not match messageCount "
                    + messageCount + " which needs " + wordsFor(messageCount));
        }
        SegmentAckBitmap bitmap = new SegmentAckBitmap();
        bitmap.words = words;
        bitmap.messageCount = messageCount;
        long acked = 0;
        for (long word : words) {
            acked += Long.bitCount(word);
        }
        if (words.length > 0 && (words[words.length - 1] & ~lowMask(messageCount)) != 0) {
            throw new IllegalArgumentException("bitmap has acked bits at or above messageCount " + messageCount);
        }
        bitmap.ackedCount = acked;
        return bitmap;
    }

    public long messageCount() {
        return messageCount;
    }

    public long ackedCount() {
        return ackedCount;
    }

    public long unackedCount() {
        return messageCount - ackedCount;
    }

    /** True when the segment has messages and every one is acknowledged: it may be reclaimed. */
    public boolean isFullyAcked() {
        return messageCount > 0 && ackedCount == messageCount;
    }

    /**
     * Records that the segment now holds {@code count} messages. Counts never shrink while the broker
     * runs; the words array doubles so a segment written one message at a time costs amortised O(1).
     */
    public void extendTo(long count) {
        checkMessageCount(count);
        if (count < messageCount) {
            throw new IllegalArgumentException("messageCount " + count + " is below the current messageCount "
                    + messageCount + "; a segment never shrinks while the broker runs");
        }
        ensureWords(wordsFor(count));
        messageCount = count;
    }

    /**
     * Forgets messages at and above {@code count}. Only recovery uses this, when the segment file on
     * disk holds fewer messages than the checkpoint saw (a machine crash lost the segment's tail), so
     * that the acks of lost messages do not acknowledge the new messages that reuse their sequences.
     */
    void truncateTo(long count) {
        checkMessageCount(count);
        if (count >= messageCount) {
            extendTo(count);
            return;
        }
        int keepWords = wordsFor(count);
        for (int i = keepWords; i < wordsFor(messageCount); i++) {
            ackedCount -= Long.bitCount(words[i]);
            words[i] = 0;
        }
        if (keepWords > 0) {
            long last = words[keepWords - 1];
            long kept = last & lowMask(count);
            ackedCount -= Long.bitCount(last) - Long.bitCount(kept);
            words[keepWords - 1] = kept;
        }
        messageCount = count;
        firstUnackedHint = Math.min(firstUnackedHint, count);
    }

    public boolean isAcked(long seq) {
        checkSeq(seq);
        return (words[(int) (seq >>> 6)] & (1L << seq)) != 0;
    }

    /**
     * Acknowledges one message.
     *
     * @return true if it was not acknowledged before
     * @throws IllegalArgumentException if {@code seq} is negative or at or beyond the message count;
     *     {@link AckTracker} checks first and reports {@link AckResult#UNKNOWN} instead
     */
    public boolean ack(long seq) {
        checkSeq(seq);
        int index = (int) (seq >>> 6);
        long bit = 1L << seq;
        long word = words[index];
        if ((word & bit) != 0) {
            return false;
        }
        words[index] = word | bit;
        ackedCount++;
        return true;
    }

    /**
     * Recovery only: the message at {@code seq} is unacknowledged again, because the copy it was relocated to never
     * reached the disk ({@link LostCopies}). Returns true if it was acknowledged.
     */
    boolean unack(long seq) {
        checkSeq(seq);
        int index = (int) (seq >>> 6);
        long bit = 1L << seq;
        long word = words[index];
        if ((word & bit) == 0) {
            return false;
        }
        words[index] = word & ~bit;
        ackedCount--;
        firstUnackedHint = Math.min(firstUnackedHint, seq);
        return true;
    }

    /**
     * Acknowledges every message from {@code fromSeq} to {@code toSeqInclusive}, a word at a time.
     *
     * @return how many of them were not acknowledged before
     */
    public long ackRange(long fromSeq, long toSeqInclusive) {
        checkSeq(fromSeq);
        checkSeq(toSeqInclusive);
        if (toSeqInclusive < fromSeq) {
            throw new IllegalArgumentException("range end " + toSeqInclusive + " is below range start " + fromSeq);
        }
        long newly = 0;
        for (int i = (int) (fromSeq >>> 6); i <= (int) (toSeqInclusive >>> 6); i++) {
            long mask = rangeMask(i, fromSeq, toSeqInclusive);
            long word = words[i];
            newly += Long.bitCount(mask & ~word);
            words[i] = word | mask;
        }
        ackedCount += newly;
        return newly;
    }

    /** The first unacknowledged sequence at or after {@code fromSeq}, or -1 if there is none. */
    public long nextUnacked(long fromSeq) {
        return next(fromSeq, -1L);
    }

    /** The first acknowledged sequence at or after {@code fromSeq}, or -1 if there is none: the end of a run of unacknowledged ones. */
    public long nextAcked(long fromSeq) {
        return next(fromSeq, 0L);
    }

    /** The first sequence at or after {@code fromSeq} whose bit, flipped by {@code flip}, is set; -1 if there is none. */
    private long next(long fromSeq, long flip) {
        if (fromSeq < 0) {
            throw new IllegalArgumentException("fromSeq " + fromSeq + " is negative");
        }
        if (fromSeq >= messageCount) {
            return -1;
        }
        int index = (int) (fromSeq >>> 6);
        int lastIndex = wordsFor(messageCount) - 1;
        long bits = (words[index] ^ flip) & (-1L << fromSeq);
        while (true) {
            if (bits != 0) {
                long seq = ((long) index << 6) + Long.numberOfTrailingZeros(bits);
                return seq < messageCount ? seq : -1;
            }
            if (++index > lastIndex) {
                return -1;
            }
            bits = words[index] ^ flip;
        }
    }

    /** Unacknowledged messages from {@code fromSeq} to {@code toSeqInclusive}, counted a word at a time. */
    public long unackedCount(long fromSeq, long toSeqInclusive) {
        checkSeq(fromSeq);
        checkSeq(toSeqInclusive);
        long acked = 0;
        for (int i = (int) (fromSeq >>> 6); i <= (int) (toSeqInclusive >>> 6); i++) {
            acked += Long.bitCount(rangeMask(i, fromSeq, toSeqInclusive) & words[i]);
        }
        return toSeqInclusive - fromSeq + 1 - acked;
    }

    /** The bits of word {@code index} that sequences {@code fromSeq} to {@code toSeqInclusive} take. */
    private static long rangeMask(int index, long fromSeq, long toSeqInclusive) {
        long mask = -1L;
        if (index == (int) (fromSeq >>> 6)) {
            mask &= -1L << fromSeq; // shift counts are taken mod 64: clears bits below fromSeq % 64
        }
        if (index == (int) (toSeqInclusive >>> 6)) {
            mask &= -1L >>> (63 - (toSeqInclusive & 63));
        }
        return mask;
    }

    /** The lowest unacknowledged sequence, or -1; amortised O(1) because the scan start only moves forward. */
    public long firstUnacked() {
        if (ackedCount == messageCount) {
            firstUnackedHint = messageCount;
            return -1;
        }
        long seq = nextUnacked(firstUnackedHint);
        firstUnackedHint = seq;
        return seq;
    }

    /** Number of words a checkpoint must write: the ones that can hold a set bit. */
    int wordCount() {
        return wordsFor(messageCount);
    }

    long word(int index) {
        return words[index];
    }

    static int wordsFor(long messageCount) {
        return (int) ((messageCount + 63) >>> 6);
    }

    private static long lowMask(long messageCount) {
        int used = (int) (messageCount & 63);
        return used == 0 ? -1L : (1L << used) - 1;
    }

    private void ensureWords(int needed) {
        if (needed > words.length) {
            int grown = (int) Math.min(Math.max((long) words.length * 2, needed), wordsFor(MAX_MESSAGE_COUNT));
            words = Arrays.copyOf(words, Math.max(grown, needed));
        }
    }

    private void checkSeq(long seq) {
        if (seq < 0 || seq >= messageCount) {
            throw new IllegalArgumentException("seq " + seq + " is outside the segment's messages 0.." + (messageCount - 1));
        }
    }

    private static void checkMessageCount(long count) {
        if (count < 0 || count > MAX_MESSAGE_COUNT) {
            throw new IllegalArgumentException("messageCount " + count + " is outside 0.." + MAX_MESSAGE_COUNT);
        }
    }
}
