package io.sluice.client.internal;

import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * Lets the first of a kind of log line through, then at most one per interval, and counts those it holds back in
 * between, so that a flood of the same warning costs a line per interval and still says how many there were.
 *
 * <p>Threads: not thread-safe; one owner (a connection's network thread).
 */
public final class LogThrottle {
    private final long intervalNanos;
    private final LongSupplier nanoClock;
    private boolean loggedAny;
    private long lastLoggedNanos;
    private long heldBack;

    /** {@code nanoClock} is {@code System::nanoTime} but in tests. */
    public LogThrottle(Duration interval, LongSupplier nanoClock) {
        this.intervalNanos = interval.toNanos();
        this.nanoClock = nanoClock;
    }

    /**
     * One more occurrence: -1 if its line is held back (and counted), else how many were held back since the last
     * line let through, which the line should say.
     */
    public long admit() {
        long now = nanoClock.getAsLong();
        if (loggedAny && now - lastLoggedNanos < intervalNanos) {
            heldBack++;
            return -1;
        }
        loggedAny = true;
        lastLoggedNanos = now;
        long count = heldBack;
        heldBack = 0;
        return count;
    }
}
