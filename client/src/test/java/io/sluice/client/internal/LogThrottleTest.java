package io.sluice.client.internal;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;

class LogThrottleTest {
    private final AtomicLong nanos = new AtomicLong(123_456_789L); // any origin: System.nanoTime's is arbitrary
    private final LogThrottle throttle = new LogThrottle(Duration.ofMinutes(1), nanos::get);

    private long at(Duration sinceStart) {
        nanos.set(123_456_789L + sinceStart.toNanos());
        return throttle.admit();
    }

    @Test
    void theFirstIsLoggedThenAtMostOneAMinuteWithTheCountHeldBack() {
        assertEquals(0, at(Duration.ZERO), "the first is logged, nothing held back before it");
        assertEquals(-1, at(Duration.ofSeconds(1)));
        assertEquals(-1, at(Duration.ofSeconds(59)));
        assertEquals(2, at(Duration.ofSeconds(60)), "a minute after the last logged: logged, with the two held back");
        assertEquals(-1, at(Duration.ofSeconds(61)));
        assertEquals(1, at(Duration.ofMinutes(10)), "a quiet spell: the next is logged at once");
        assertEquals(0, at(Duration.ofMinutes(20)));
    }
}
