package io.sluice.broker.log;

import org.slf4j.Logger;

import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Operator log lines about one kind of event that outside input can make as often as it likes, rate-limited so that
 * a flood of it cannot flood the log: rejected connections (refused by a limit, failed authentication, closed for a
 * protocol error, failed TLS), and what happens to single messages (taken back after an ack timeout, dead-lettered
 * or failing to be), which the queues' metrics count exactly.
 *
 * <p>Rule L1: in each interval the first {@code linesPerInterval} lines are logged as asked; the rest
 * are only counted, and when the interval ends one WARN says how many were suppressed. The broker
 * calls {@link #flush()} every second, so the summary comes even if the flood stopped; an interval
 * with nothing suppressed leaves no summary.
 *
 * <p>Thread-safe: called from every event loop and the HTTP threads. The decision is taken under a
 * lock, the logging outside it.
 */
public final class RateLimitedLog {
    /** What the broker uses for each kind: 20 lines a minute, then one summary. */
    public static final int LINES_PER_INTERVAL = 20;
    public static final long INTERVAL_MS = 60_000;

    /** What the lines are about, as the summary says it: "rejected connections". */
    private final String subject;
    private final int linesPerInterval;
    private final long intervalNanos;
    private final LongSupplier nanoClock;
    private long intervalStartNanos;
    private int logged;
    private long suppressed;
    private Logger lastSuppressedTo;

    public RateLimitedLog(String subject, int linesPerInterval, long intervalMs, LongSupplier nanoClock) {
        this.subject = subject;
        this.linesPerInterval = linesPerInterval;
        this.intervalNanos = TimeUnit.MILLISECONDS.toNanos(intervalMs);
        this.nanoClock = nanoClock;
        this.intervalStartNanos = nanoClock.getAsLong();
    }

    /** The broker's: {@value #LINES_PER_INTERVAL} lines per {@value #INTERVAL_MS} ms. */
    public static RateLimitedLog standard(String subject) {
        return new RateLimitedLog(subject, LINES_PER_INTERVAL, INTERVAL_MS, System::nanoTime);
    }

    /** Logs at INFO unless suppressed; each text argument {@link Printable#escape escaped} (these lines quote clients). */
    public void info(Logger log, String format, Object... args) {
        if (admit(log)) {
            log.info(format, printable(args));
        }
    }

    /** Logs at WARN unless suppressed; each text argument {@link Printable#escape escaped} (these lines quote clients). */
    public void warn(Logger log, String format, Object... args) {
        if (admit(log)) {
            log.warn(format, printable(args));
        }
    }

    /**
     * Every line of these kinds is about what outside input did, and most quote it: each argument but a throwable and
     * text {@link Printable.Escaped escaped} already is escaped.
     */
    private static Object[] printable(Object[] args) {
        Object[] out = args.clone();
        for (int i = 0; i < out.length; i++) {
            if (out[i] != null && !(out[i] instanceof Throwable) && !(out[i] instanceof Printable.Escaped)) {
                out[i] = Printable.escape(out[i].toString());
            }
        }
        return out;
    }

    /** Logs the summary of an interval that has ended, if it suppressed anything. */
    public void flush() {
        admit(null);
    }

    /** Rule L1. With {@code log} null only ends a finished interval. */
    private boolean admit(Logger log) {
        long now = nanoClock.getAsLong();
        Logger summaryTo = null;
        long summaryCount = 0;
        long summarySeconds = 0;
        boolean admitted = false;
        synchronized (this) {
            if (now - intervalStartNanos >= intervalNanos) {
                if (suppressed > 0) {
                    summaryTo = lastSuppressedTo;
                    summaryCount = suppressed;
                    summarySeconds = TimeUnit.NANOSECONDS.toSeconds(now - intervalStartNanos);
                }
                intervalStartNanos = now;
                logged = 0;
                suppressed = 0;
            }
            if (log != null) {
                if (logged < linesPerInterval) {
                    logged++;
                    admitted = true;
                } else {
                    suppressed++;
                    lastSuppressedTo = log;
                }
            }
        }
        if (summaryTo != null) {
            summaryTo.warn("Suppressed {} log lines about {} in the last {} s (the first {} of every {} s are logged).",
                    summaryCount, subject, summarySeconds, linesPerInterval, TimeUnit.NANOSECONDS.toSeconds(intervalNanos));
        }
        return admitted;
    }
}
