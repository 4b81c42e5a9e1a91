package io.sluice.storage.reclaim;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;

/**
 * Rule "a failing pass is counted, and logged sparingly" (docs/storage.md, "Reclaim"): the reclaim passes of one queue
 * that threw. A pass that throws has cleared its request, so it is tried again by the periodic pass (rule "reclaim is
 * never forgotten"), never in a loop; a failure that stays (a queue whose ack state cannot be written fails every pass
 * that would delete a segment) so costs one attempt per period. Each failure is counted ({@link #count}, a metric); the
 * first of a run is logged with its stack trace, later ones at most once per {@link #LOG_INTERVAL_NANOS} with how many
 * failed meanwhile, and the first pass that succeeds after a run says so: a failure that stays must not log a stack
 * trace ten times a second.
 *
 * <p>Threads: the flusher, which runs the passes; {@link #count} from any thread.
 */
final class ReclaimFailures {
    private static final Logger LOG = LoggerFactory.getLogger(Reclaimer.class);
    private static final long LOG_INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(1);

    private final String queueName;
    /** Written by the flusher only. */
    private volatile long count;
    /** Passes failed since the last that succeeded; 0 when the last succeeded. */
    private long inARow;
    /** Failures since the last line logged about them. */
    private long unlogged;
    private long lastLoggedNanos;

    ReclaimFailures(String queueName) {
        this.queueName = queueName;
    }

    /** A pass that began at {@code nowNanos} threw {@code failure}. */
    void failed(long nowNanos, Throwable failure) {
        count++;
        if (inARow++ == 0) {
            lastLoggedNanos = nowNanos;
            LOG.error("Reclaim of queue '{}' failed; every later pass tries again, and while they fail they are logged at most "
                    + "once a minute (counted in the queue's reclaim failures).", queueName, failure);
            return;
        }
        unlogged++;
        if (nowNanos - lastLoggedNanos >= LOG_INTERVAL_NANOS) {
            LOG.error("Reclaim of queue '{}' still fails: {} passes failed in the last {} s, the last with {}.", queueName,
                    unlogged, TimeUnit.NANOSECONDS.toSeconds(nowNanos - lastLoggedNanos), failure.toString());
            unlogged = 0;
            lastLoggedNanos = nowNanos;
        }
    }

    /** A pass returned. */
    void succeeded() {
        if (inARow > 0) {
            LOG.info("Reclaim of queue '{}' works again, after {} failed passes.", queueName, inARow);
            inARow = 0;
            unlogged = 0;
        }
    }

    /** Passes that threw since the queue was opened. */
    long count() {
        return count;
    }
}
