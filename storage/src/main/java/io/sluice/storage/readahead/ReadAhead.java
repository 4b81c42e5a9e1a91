package io.sluice.storage.readahead;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The store's read-ahead thread, {@code sluice-read-ahead}: keeps cold reads off the threads that
 * deliver. A consumer catching up on an old backlog reads segments no longer in the page cache; each
 * page fault would stall the broker's event loop, and with it appends and the other queues on that
 * loop. This thread walks ahead of every open reader by at most a budget of messages, touching each
 * record, so that the reader finds its pages resident. A reader at the tail (the usual case) costs
 * nothing: there is nothing ahead of it. With nothing to touch the thread looks again after 1 ms, then
 * backs off, doubling up to 16 ms (a reader draining at 800 k msg/s moves 13 k records in that time, well
 * within the default budget of 50 k); looking every millisecond was a thousand wake-ups a second that
 * competed for a core with the threads of every delivery (W1, two cores). A new reader wakes it at once.
 *
 * <p>Each {@link Cursor} is touched only by this thread, apart from its registration and removal.
 */
public final class ReadAhead implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ReadAhead.class);
    private static final long MIN_IDLE_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long MAX_IDLE_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(16);

    /** One reader followed by the read-ahead thread. */
    public interface Cursor {
        /**
         * Touches up to {@code limit} of the reader's coming records, starting after those already
         * touched; returns how many it touched (0 when it is {@code budget} ahead or at the end).
         */
        int advance(int limit);

        /** Releases what the cursor holds (its tailer); called on the read-ahead thread. */
        void release();

        /**
         * A mapped read faulted while touching the reader's records (the JVM's InternalError for a
         * SIGBUS): the cursor's queue is failed; the thread stops following the cursor and goes on.
         */
        void faulted(InternalError e);
    }

    private final Map<Object, Cursor> cursors = new ConcurrentHashMap<>();
    private final Map<Object, Cursor> retired = new ConcurrentHashMap<>();
    private final Thread thread;
    private volatile boolean running = true;

    public ReadAhead() {
        thread = new Thread(this::run, "sluice-read-ahead");
        thread.setDaemon(true);
    }

    public void start() {
        thread.start();
    }

    public void register(Object owner, Cursor cursor) {
        cursors.put(owner, cursor);
        LockSupport.unpark(thread);
    }

    /** The owner closed: its cursor is released by the read-ahead thread, which this wakes. */
    public void unregister(Object owner) {
        Cursor c = cursors.remove(owner);
        if (c != null) {
            retired.put(owner, c);
            LockSupport.unpark(thread); // its tailer may map segments that reclaim is about to delete
        }
    }

    private void run() {
        long idlePark = MIN_IDLE_PARK_NANOS;
        while (running) {
            releaseRetired();
            int touched = 0;
            for (Map.Entry<Object, Cursor> entry : cursors.entrySet()) {
                Cursor c = entry.getValue();
                try {
                    touched += c.advance(1_000);
                } catch (RuntimeException e) {
                    LOG.debug("Read-ahead of a reader stopped for this turn: {}", e.toString());
                    c.release(); // its tailer may be in a segment that was reclaimed; the next turn starts afresh
                } catch (InternalError e) {
                    // Caught, not left to end this thread: every other reader's read-ahead would stop with it.
                    cursors.remove(entry.getKey(), c);
                    c.faulted(e);
                    c.release();
                }
            }
            if (touched == 0) {
                LockSupport.parkNanos(this, idlePark);
                idlePark = Math.min(MAX_IDLE_PARK_NANOS, idlePark * 2);
            } else {
                idlePark = MIN_IDLE_PARK_NANOS;
            }
        }
        releaseRetired();
        cursors.values().forEach(Cursor::release);
        cursors.clear();
    }

    private void releaseRetired() {
        for (Object owner : retired.keySet()) {
            Cursor c = retired.remove(owner);
            if (c != null) {
                c.release();
            }
        }
    }

    @Override
    public void close() {
        running = false;
        LockSupport.unpark(thread);
        try {
            thread.join(TimeUnit.SECONDS.toMillis(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
