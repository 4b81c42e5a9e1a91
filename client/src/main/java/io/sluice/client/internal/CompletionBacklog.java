package io.sluice.client.internal;

import java.util.concurrent.TimeUnit;

/**
 * How many settled messages of one producer wait for their futures to be completed (behind a callback that takes its
 * time), with a wait for that count to fall below a limit: the producer's senders wait here, so that a slow callback
 * slows them rather than let the queue of settled futures grow with every message sent. Thread-safe: the network thread
 * adds, the thread completing the futures removes, senders wait.
 */
public final class CompletionBacklog {
    private final int limit;
    /** Written under the lock; read without it for the senders' fast path. */
    private volatile int queued;

    public CompletionBacklog(int limit) {
        this.limit = limit;
    }

    /** {@code count} messages were settled, their futures not yet completed. */
    public synchronized void added(int count) {
        queued += count;
    }

    /**
     * {@code count} messages' futures were completed: they no longer count. Counted per batch of settlements, not per
     * message: a lock and a write of the count the senders read, per message, cost the perf CLI's W1 a sixth of its rate.
     */
    public synchronized void completed(int count) {
        int before = queued;
        queued = before - count;
        if (before >= limit && queued < limit) {
            notifyAll();
        }
    }

    /** How many settled messages wait for their futures to be completed. */
    public int queued() {
        return queued;
    }

    /** Whether {@link #queued()} is at the limit or above: a sender waits. */
    public boolean full() {
        return queued >= limit;
    }

    /**
     * Waits until fewer than the limit are queued, up to {@code timeoutNanos} (Long.MAX_VALUE: for good); false if the
     * time ran out first.
     */
    public boolean awaitRoom(long timeoutNanos) throws InterruptedException {
        if (queued < limit) {
            return true;
        }
        long start = System.nanoTime();
        synchronized (this) {
            while (queued >= limit) {
                if (timeoutNanos == Long.MAX_VALUE) {
                    wait();
                    continue;
                }
                long left = timeoutNanos - (System.nanoTime() - start);
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
            return true;
        }
    }
}
