package io.sluice.storage;

import io.sluice.storage.ack.AckLog;
import io.sluice.storage.segment.SegmentLog;
import io.sluice.storage.segment.WrittenRange;

import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * A queue's written pages out of the broker's mappings: before each force of the segments, so that writeback finds
 * none of them mapped (docs/storage.md, "Written pages and the cost of a force"), and once per sync interval, out of
 * the broker's resident memory (docs/storage.md, "Resident memory").
 *
 * <p>Threads: {@link #beforeForce} runs on the thread forcing the segments, {@link #periodic} on the flusher; both take
 * the queue's lock only to read what was written, and never touch a closed queue's files.
 */
final class WrittenPageDrops {
    private final ReentrantLock lock;
    private final SegmentLog log;
    private final AckLog ackLog;
    private final BooleanSupplier closed;

    WrittenPageDrops(ReentrantLock lock, SegmentLog log, AckLog ackLog, BooleanSupplier closed) {
        this.lock = lock;
        this.log = log;
        this.ackLog = ackLog;
        this.closed = closed;
    }

    /** The pages written since the last force, dropped before the next one. */
    void beforeForce() {
        WrittenRange written;
        lock.lock();
        try {
            written = closed.getAsBoolean() ? null : log.pagesWrittenSinceLastForce();
        } finally {
            lock.unlock();
        }
        if (written != null) {
            written.dropAndRelease(); // without the queue's lock: the madvise waits for other CPUs, appends need not
        }
    }

    /** Once per sync interval: the segments' and the ack journal's written pages. */
    void periodic() {
        lock.lock();
        try {
            if (!closed.getAsBoolean()) {
                log.dropWrittenPages();
                ackLog.dropWrittenPages();
            }
        } finally {
            lock.unlock();
        }
    }
}
