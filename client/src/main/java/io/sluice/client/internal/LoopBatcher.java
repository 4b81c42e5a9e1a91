package io.sluice.client.internal;

import io.netty.util.internal.PlatformDependent;

import java.util.Queue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Hands items from any thread to the network thread in bursts: each {@link #submit} is a lock-free queue offer,
 * and only the submit that finds no drain pending schedules one task on the loop, which takes every queued item
 * in submission order and then ends the batch once (one channel flush instead of a task and a selector wakeup
 * per item). Thread-safe.
 *
 * <p>Whoever holds the {@code scheduled} flag is the queue's only consumer: the drain task on the loop, or, when
 * the loop refuses the task because it is shutting down, the submitting thread, which hands every queued item
 * to {@link Sink#rejected}. The flag is released only after the queue was found empty, and the queue is looked at
 * again after releasing it, so no item is left behind without a drain coming for it.
 */
public final class LoopBatcher<T> {
    /** Items one loop task takes before it yields to reads and other tasks; the rest get a new task. */
    static final int MAX_ITEMS_PER_TURN = 4096;

    /** Where the items go. */
    public interface Sink<T> {
        /** On the loop, for each item in submission order. */
        void onLoop(T item);

        /** On the loop, once after the items of one drain: typically one channel flush. */
        void endOfBatch();

        /** On any thread, for each item still queued when the loop refused the drain (the connection closed). */
        void rejected(T item);
    }

    private final Queue<T> queue = PlatformDependent.newMpscQueue();
    private final AtomicBoolean scheduled = new AtomicBoolean();
    private final Executor loop;
    private final Sink<T> sink;
    private final Runnable drainTask = this::drain;

    public LoopBatcher(Executor loop, Sink<T> sink) {
        this.loop = loop;
        this.sink = sink;
    }

    /** Queues {@code item} for the loop; schedules a drain unless one is already coming. */
    public void submit(T item) {
        queue.offer(item);
        if (!scheduled.get() && scheduled.compareAndSet(false, true)) {
            schedule();
        }
    }

    /** Holding the flag: runs the drain on the loop, or fails the queued items if the loop refuses. */
    private void schedule() {
        while (true) {
            try {
                loop.execute(drainTask);
                return;
            } catch (RejectedExecutionException e) {
                T item;
                while ((item = queue.poll()) != null) {
                    sink.rejected(item);
                }
                scheduled.set(false);
                if (queue.isEmpty() || !scheduled.compareAndSet(false, true)) {
                    return;
                }
            }
        }
    }

    /** On loop, holding the flag. */
    private void drain() {
        try {
            T item;
            int taken = 0;
            while (taken < MAX_ITEMS_PER_TURN && (item = queue.poll()) != null) {
                taken++;
                sink.onLoop(item);
            }
        } finally {
            try {
                sink.endOfBatch();
            } finally {
                release();
            }
        }
    }

    /** On loop, at the end of a drain: keeps the flag for a new task if items remain, else lets go of it. */
    private void release() {
        if (!queue.isEmpty()) {
            schedule();
            return;
        }
        scheduled.set(false);
        if (!queue.isEmpty() && scheduled.compareAndSet(false, true)) {
            schedule();
        }
    }
}
