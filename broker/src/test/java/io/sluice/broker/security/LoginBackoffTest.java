package io.sluice.broker.security;

import io.sluice.broker.auth.Authenticator;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.security.LoginBackoff.Listener;
import io.sluice.broker.security.LoginBackoff.Outcome;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Rules B1 to B5 of {@link LoginBackoff} on a hand-driven clock. */
class LoginBackoffTest {
    private static final Authenticator.Result WRONG = new Authenticator.Result("alice", "wrong user name or password");
    private static final Authenticator.Result RIGHT = new Authenticator.Result("alice", null);
    private static final InetSocketAddress A = new InetSocketAddress("10.0.0.1", 4000);
    private static final InetSocketAddress A_OTHER_PORT = new InetSocketAddress("10.0.0.1", 4001);
    private static final InetSocketAddress B = new InetSocketAddress("10.0.0.2", 4000);

    private final AtomicLong nanos = new AtomicLong(1_000_000_000L);
    private final AtomicInteger checks = new AtomicInteger();

    private LoginBackoff backoff(int threshold, long initialMs, long maxMs, int sources) {
        BrokerConfig.Auth auth = new BrokerConfig.Auth();
        auth.backoffAfterFailures = threshold;
        auth.backoffInitialMs = initialMs;
        auth.backoffMaxMs = maxMs;
        auth.backoffTrackedSources = sources;
        return new LoginBackoff(auth, nanos::get);
    }

    private Outcome attempt(LoginBackoff backoff, InetSocketAddress source, Authenticator.Result result) {
        return backoff.authenticate(source, Listener.CLIENT, () -> {
            checks.incrementAndGet();
            return result;
        });
    }

    private void advanceMs(long ms) {
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(ms));
    }

    @Test
    void shouldBackOffExponentiallyUpToTheCapAfterTheThreshold() {
        LoginBackoff b = backoff(3, 1000, 5000, 100);
        for (int i = 0; i < 3; i++) {
            assertFalse(attempt(b, A, WRONG).braked());
        }
        long[] expectedMs = {1000, 2000, 4000, 5000, 5000};
        for (long expected : expectedMs) {
            Outcome refused = attempt(b, A_OTHER_PORT, RIGHT);
            assertTrue(refused.braked(), "B2: the right password is refused in backoff");
            assertEquals(expected, refused.retryAfterMs());
            assertTrue(refused.result().rejected().contains("too many failed authentications from 10.0.0.1; try again in "),
                    refused.result().rejected());
            advanceMs(expected - 1);
            assertTrue(attempt(b, A, WRONG).braked(), "B2: refusals in backoff do not extend it, nor run the check");
            advanceMs(1);
            assertFalse(attempt(b, A, WRONG).braked(), "one attempt once the backoff expired");
        }
        assertEquals(3 + expectedMs.length, checks.get());
        assertEquals(3 + 3 * expectedMs.length, b.refusals(Listener.CLIENT));
        assertEquals(0, b.refusals(Listener.ADMIN));
        assertFalse(attempt(b, B, RIGHT).braked(), "another source is not affected");
    }

    @Test
    void shouldForgetASourceOnSuccessOrAfterTenMaximumBackoffsOfQuiet() {
        LoginBackoff b = backoff(2, 1000, 3000, 100);
        attempt(b, A, WRONG);
        assertTrue(attempt(b, A, RIGHT).result().accepted());
        attempt(b, A, WRONG);
        assertFalse(attempt(b, A, WRONG).braked(), "B4: the count started again after the success");
        assertTrue(attempt(b, A, RIGHT).braked());
        advanceMs(30_001);
        assertTrue(attempt(b, A, RIGHT).result().accepted());
        attempt(b, A, WRONG);
        advanceMs(30_001);
        attempt(b, A, WRONG);
        assertFalse(attempt(b, A, RIGHT).braked(), "B4: the failure before 30 s of quiet was forgotten");
    }

    @Test
    void shouldCountAttemptsInProgressAgainstTheThreshold() {
        LoginBackoff b = backoff(2, 1000, 1000, 100);
        AtomicInteger inner = new AtomicInteger();
        Outcome outer = b.authenticate(A, Listener.ADMIN, () -> {
            assertFalse(attempt(b, A, WRONG).braked(), "a second check may run while the first is in progress");
            Outcome third = attempt(b, A, RIGHT);
            assertTrue(third.braked(), "B3: not a third while two count towards the threshold of 2");
            inner.incrementAndGet();
            return WRONG;
        });
        assertEquals(1, inner.get());
        assertFalse(outer.braked());
        assertTrue(attempt(b, A, RIGHT).braked(), "two failures: in backoff");
        assertEquals(1, b.refusals(Listener.ADMIN));
        assertEquals(3, b.refusals(Listener.CLIENT));
    }

    @Test
    void shouldHoldAtMostTheConfiguredNumberOfSources() {
        LoginBackoff b = backoff(1, 60_000, 60_000, 3);
        for (int i = 0; i < 1000; i++) {
            attempt(b, new InetSocketAddress("10.1." + (i / 250) + "." + (i % 250), 4000), WRONG);
            assertTrue(b.trackedSources() <= 3, "B5: " + b.trackedSources() + " sources");
        }
        assertTrue(attempt(b, new InetSocketAddress("10.1.3.249", 4000), RIGHT).braked(), "the latest source is still held");
        assertFalse(attempt(b, new InetSocketAddress("10.1.0.0", 4000), RIGHT).braked(), "the least recent was forgotten");
    }
}
