package io.sluice.storage;

import io.sluice.storage.readahead.ReadAhead;

import io.sluice.storage.reclaim.Reclaimer;

import java.util.Collection;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A queue's open readers: their registration with the read-ahead thread while they are open, and the
 * reclaimer's view of them (rule R1 of docs/storage.md): where the oldest of them is, and which relocated
 * copies each must skip. The reclaimer's calls come under the queue's lock, which guards the readers'
 * {@code segment} and {@code copiesToSkip}; the list itself may be walked from any thread.
 */
final class OpenReaders implements Reclaimer.Readers {
    private final Collection<QueueReader> readers = new CopyOnWriteArrayList<>();
    private final ReadAhead readAhead; // null: no read-ahead thread (tests, tools)

    OpenReaders(ReadAhead readAhead) {
        this.readAhead = readAhead;
    }

    /** A reader opened; {@code cursor}, if not null, is what the read-ahead thread follows for it. */
    void opened(QueueReader reader, ReadAhead.Cursor cursor) {
        readers.add(reader);
        if (readAhead != null && cursor != null) {
            readAhead.register(reader, cursor);
        }
    }

    /** Whether opened readers get a read-ahead cursor at all. */
    boolean readsAhead() {
        return readAhead != null;
    }

    void closed(QueueReader reader) {
        readers.remove(reader);
        if (readAhead != null) {
            readAhead.unregister(reader);
        }
    }

    /** At the queue's close: closes every reader still open. */
    void closeAll() {
        for (QueueReader r : readers) {
            r.close();
        }
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
