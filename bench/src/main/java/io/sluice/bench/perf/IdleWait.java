package io.sluice.bench.perf;

import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * Waits for the end of a phase of a run (every confirm in, the queue drained) for as long as it makes progress:
 * the run's drain timeout bounds the time without progress, not the phase, so a slow broker is waited for and
 * a stuck one is not. On the coordinating thread; the phase's callbacks run elsewhere.
 */
final class IdleWait {
    private static final long POLL_MILLIS = 5;

    private IdleWait() {
    }

    /**
     * Returns true once {@code done}; false when {@code progress} (a count that grows while the phase moves)
     * stood still for {@code idleLimitNanos}.
     */
    static boolean until(BooleanSupplier done, LongSupplier progress, long idleLimitNanos) throws InterruptedException {
        long last = progress.getAsLong();
        long lastChange = System.nanoTime();
        while (!done.getAsBoolean()) {
            long now = progress.getAsLong();
            if (now != last) {
                last = now;
                lastChange = System.nanoTime();
            } else if (System.nanoTime() - lastChange > idleLimitNanos) {
                return false;
            }
            Thread.sleep(POLL_MILLIS);
        }
        return true;
    }
}
