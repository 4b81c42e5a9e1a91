package io.sluice.broker.queue;

import java.util.concurrent.RejectedExecutionException;
import java.util.function.BooleanSupplier;

/**
 * Rule "a failed checkpoint is retried" (docs/storage.md, "Producer state"): once a queue's producer checkpoint could
 * not be written and nothing else asks for the next one (a queue gone quiet), it is asked for again after
 * {@value #FIRST_DELAY_MS} ms, then after twice as long each time it fails again, up to {@value #MAX_DELAY_MS} ms, until
 * one is written. Until then the segments the checkpoint does not cover stay on disk, however acknowledged (rule R6);
 * before the rule the next attempt came only with the next segment entered, 50,000 records, a registration or the
 * shutdown. A queue closed (its checkpoints are refused for good) or whose storage failed (nothing becomes durable
 * again until a restart, and a checkpoint waits for its records to be) is not retried.
 *
 * <p>Threads: the queue's, which {@link #failed}, {@link #succeeded} and the retry itself run on.
 */
final class CheckpointRetry {
    static final long FIRST_DELAY_MS = 100;
    static final long MAX_DELAY_MS = 5_000;

    /** Runs a task on the queue's thread after a delay: in the broker, the queue's event loop schedules it. */
    @FunctionalInterface
    interface Timer {
        void schedule(Runnable task, long delayMillis);
    }

    private final Timer timer;
    /** True if no checkpoint can be written any more: the queue closed, or its storage failed. */
    private final BooleanSupplier hopeless;
    /** Asks for a checkpoint, unless one was written or is being written meanwhile. */
    private final Runnable retry;
    private long nextDelayMillis = FIRST_DELAY_MS;
    private boolean scheduled;

    CheckpointRetry(Timer timer, BooleanSupplier hopeless, Runnable retry) {
        this.timer = timer;
        this.hopeless = hopeless;
        this.retry = retry;
    }

    /** A checkpoint failed and no other is asked for: the next attempt comes after the current delay, which doubles. */
    void failed() {
        if (scheduled || hopeless.getAsBoolean()) {
            return;
        }
        long delay = nextDelayMillis;
        nextDelayMillis = Math.min(MAX_DELAY_MS, 2 * nextDelayMillis);
        scheduled = true;
        try {
            timer.schedule(() -> {
                scheduled = false;
                if (!hopeless.getAsBoolean()) {
                    retry.run();
                }
            }, delay);
        } catch (RejectedExecutionException e) {
            scheduled = false; // the broker stops: its shutdown takes the last checkpoint
        }
    }

    /** A checkpoint was written: a later failure starts again from the first delay. */
    void succeeded() {
        nextDelayMillis = FIRST_DELAY_MS;
    }
}
