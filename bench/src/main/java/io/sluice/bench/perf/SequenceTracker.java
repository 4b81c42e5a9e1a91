package io.sluice.bench.perf;

import java.util.BitSet;

/**
 * Counts lost and duplicate messages from sequence numbers. Thread-safe: confirms (on the producers'
 * callback threads) and receipts (on the consumers' handler threads) take separate locks, so the two sides of
 * a run never wait for each other here.
 *
 * <p>Per producer it keeps two bit sets indexed by sequence: confirmed by the broker, and received at
 * least once. Rule "loss": a message is lost when it was confirmed and never received; a message that was
 * never confirmed (failed, or the run stopped first) is not lost, whether it arrived or not. Rule
 * "duplicate": every receipt of a sequence after its first counts once.
 */
final class SequenceTracker {
    private final Object confirmLock = new Object();
    private final Object receiveLock = new Object();
    private final BitSet[] confirmed;
    private final BitSet[] received;
    private long confirmedCount; // under confirmLock
    private long receivedUnique; // under receiveLock
    private long duplicates; // under receiveLock

    SequenceTracker(int producers) {
        confirmed = new BitSet[producers];
        received = new BitSet[producers];
        for (int i = 0; i < producers; i++) {
            confirmed[i] = new BitSet();
            received[i] = new BitSet();
        }
    }

    void confirmed(int producer, long sequence) {
        int index = index(sequence);
        synchronized (confirmLock) {
            if (!confirmed[producer].get(index)) {
                confirmed[producer].set(index);
                confirmedCount++;
            }
        }
    }

    /** Records one receipt; returns whether it was the first receipt of this message. */
    boolean received(int producer, long sequence) {
        if (producer < 0 || producer >= received.length) {
            throw new IllegalArgumentException("producer index " + producer + " is not below the "
                    + received.length + " producers of this run: a message from another run is in the queue");
        }
        int index = index(sequence);
        synchronized (receiveLock) {
            if (received[producer].get(index)) {
                duplicates++;
                return false;
            }
            received[producer].set(index);
            receivedUnique++;
            return true;
        }
    }

    long confirmedCount() {
        synchronized (confirmLock) {
            return confirmedCount;
        }
    }

    long receivedUnique() {
        synchronized (receiveLock) {
            return receivedUnique;
        }
    }

    long duplicates() {
        synchronized (receiveLock) {
            return duplicates;
        }
    }

    /** Confirmed but never received, over all producers. */
    long lost() {
        synchronized (confirmLock) {
            synchronized (receiveLock) {
                long lost = 0;
                for (int i = 0; i < confirmed.length; i++) {
                    BitSet missing = (BitSet) confirmed[i].clone();
                    missing.andNot(received[i]);
                    lost += missing.cardinality();
                }
                return lost;
            }
        }
    }

    private static int index(long sequence) {
        if (sequence < 0 || sequence > Integer.MAX_VALUE - 1) {
            throw new IllegalArgumentException("sequence " + sequence + " is outside 0.." + (Integer.MAX_VALUE - 1));
        }
        return (int) sequence;
    }
}
