package io.sluice.broker.log;

import ch.qos.logback.classic.Level;
import io.sluice.broker.LogCapture;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Rule L1 of {@link RateLimitedLog} on a hand-driven clock. */
class RateLimitedLogTest {
    private static final Logger LOG = LoggerFactory.getLogger(RateLimitedLogTest.class);
    private final AtomicLong nanos = new AtomicLong(5_000_000_000L);

    @Test
    void shouldLogTheFirstLinesOfAnIntervalThenOneSummaryWithTheCount() {
        RateLimitedLog limiter = new RateLimitedLog("rejected connections", 3, 60_000, nanos::get);
        try (LogCapture log = LogCapture.of(RateLimitedLogTest.class)) {
            for (int i = 0; i < 10; i++) {
                limiter.warn(LOG, "Refusing a connection from {}: {}.", "10.0.0." + i, "no");
            }
            assertEquals(3, log.count(Level.INFO));
            nanos.addAndGet(TimeUnit.SECONDS.toNanos(59));
            limiter.info(LOG, "Closing the connection from {}.", "10.0.0.99");
            limiter.flush();
            assertEquals(3, log.count(Level.INFO), "still within the interval: counted, not logged");
            nanos.addAndGet(TimeUnit.SECONDS.toNanos(1));
            limiter.flush();
            assertEquals(1, log.count(Level.WARN, "Suppressed 8 log lines about rejected connections in the last 60 s"));
            limiter.flush();
            assertEquals(4, log.count(Level.INFO), "one summary per interval, none for an empty one");
            limiter.info(LOG, "Closing the connection from {}.", "10.0.0.100");
            assertEquals(1, log.count(Level.INFO, "10.0.0.100"), "a new interval logs its first lines again");
        }
    }
}
