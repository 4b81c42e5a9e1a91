package io.sluice.storage;

import io.sluice.storage.reclaim.Reclaimer;

import java.util.Collection;

/**
 * The reclaimer's view of a queue's open readers (rule R1 of docs/storage.md): where the oldest of
 * them is, and which relocated copies each must skip. Called under the queue's lock, which guards
 * the readers' {@code segment} and {@code copiesToSkip}.
 */
final class OpenReaders implements Reclaimer.Readers {
    private final Collection<QueueReader> readers;

    OpenReaders(Collection<QueueReader> readers) {
        this.readers = readers;
    }

    @Override
    public int oldestSegment() {
        int oldest = Integer.MAX_VALUE;
        for (QueueReader r : readers) {
            oldest = Math.min(oldest, r.segment);
        }
        return oldest;
    }

    @Override
    public void copied(int fromSegment, long newId) {
        for (QueueReader reader : readers) {
            // A reader past this segment has processed every record in it (its segment moves only
            // once the record before is done), the straggler among them, unacked then as now.
            if (reader.segment > fromSegment) {
                reader.copiesToSkip.add(newId);
            }
        }
    }
}
