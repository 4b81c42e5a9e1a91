package io.sluice.broker.security;

import io.sluice.broker.auth.Authenticator;
import io.sluice.broker.config.BrokerConfig;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The brake on password guessing, per source (the remote IP address), shared by the client listener
 * (HELLO) and the admin port (HTTP Basic), so that one table and one set of rules cover both:
 * <ol>
 * <li>B1: after {@code auth.backoff-after-failures} refused attempts in a row, the source is in backoff
 * for {@code auth.backoff-initial-ms}; each further refused attempt after a backoff doubles it, up to
 * {@code auth.backoff-max-ms}.</li>
 * <li>B2: in backoff, every attempt from the source is refused without checking its credentials (the
 * right ones too, and without the cost of hashing) until the backoff expires; such refusals do not
 * extend it.</li>
 * <li>B3: parallel attempts count before they are answered: a source may have at most (threshold minus
 * failures so far) attempts being checked at once, and one once it has reached the threshold, so that
 * 50 parallel guesses get no more checks than 50 sequential ones.</li>
 * <li>B4: an accepted attempt forgets the source; so do ten maximum backoffs without a refusal.</li>
 * <li>B5: the table holds at most {@code auth.backoff-tracked-sources} sources; a new one beyond that
 * makes the table forget the source it touched least recently (memory stays bounded; an attacker with
 * more addresses than that can make the table forget its own).</li>
 * </ol>
 * Every refusal, by credentials or by B2/B3, is counted per {@link Listener}. The caller answers a
 * refusal after {@link #REFUSAL_DELAY_MS}, scheduled: nothing here waits.
 *
 * <p>Thread-safe: one lock, held for a map operation and never while credentials are checked.
 */
public final class LoginBackoff {
    /** Every refusal is answered this long after the attempt (the caller schedules it). */
    public static final long REFUSAL_DELAY_MS = 200;

    /** The listener an attempt came through, the label of the failure counter. */
    public enum Listener {
        CLIENT, ADMIN;

        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * The outcome of an attempt: the authentication's result, and when B2 or B3 refused it without a
     * check, how long until the source may try again (0 otherwise).
     */
    public record Outcome(Authenticator.Result result, long retryAfterMs) {
        public boolean braked() {
            return retryAfterMs > 0;
        }
    }

    private static final class Source {
        int failures;
        int checking;
        long blockedUntilNanos;
        long lastRefusalNanos;
    }

    private final int threshold;
    private final long initialNanos;
    private final long maxNanos;
    private final long forgetNanos;
    private final LongSupplier nanoClock;
    private final Map<String, Source> sources;
    private final Map<Listener, LongAdder> refusals = new EnumMap<>(Listener.class);

    public LoginBackoff(BrokerConfig.Auth auth, LongSupplier nanoClock) {
        this.threshold = auth.backoffAfterFailures;
        this.initialNanos = TimeUnit.MILLISECONDS.toNanos(auth.backoffInitialMs);
        this.maxNanos = TimeUnit.MILLISECONDS.toNanos(auth.backoffMaxMs);
        this.forgetNanos = 10 * maxNanos;
        this.nanoClock = nanoClock;
        int capacity = auth.backoffTrackedSources;
        // Rule B5: access order, the least recently touched source goes first.
        this.sources = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Source> eldest) {
                return size() > capacity;
            }
        };
        for (Listener l : Listener.values()) {
            refusals.put(l, new LongAdder());
        }
    }

    /**
     * Runs {@code check} for an attempt from {@code remote} unless B2 or B3 refuses it first, and
     * records the result. {@code check} runs outside the lock.
     */
    public Outcome authenticate(SocketAddress remote, Listener listener, Supplier<Authenticator.Result> check) {
        String key = key(remote);
        long now = nanoClock.getAsLong();
        long retryAfterNanos;
        synchronized (sources) {
            Source s = sources.computeIfAbsent(key, k -> new Source());
            if (s.checking == 0 && s.blockedUntilNanos - now <= 0 && now - s.lastRefusalNanos > forgetNanos) {
                s.failures = 0; // rule B4: long quiet
            }
            retryAfterNanos = s.blockedUntilNanos - now;
            if (retryAfterNanos <= 0 && s.checking >= Math.max(1, threshold - s.failures)) {
                retryAfterNanos = TimeUnit.MILLISECONDS.toNanos(REFUSAL_DELAY_MS); // rule B3
            }
            if (retryAfterNanos <= 0) {
                s.checking++;
            }
        }
        if (retryAfterNanos > 0) {
            refusals.get(listener).increment();
            long retryAfterMs = Math.max(1, TimeUnit.NANOSECONDS.toMillis(retryAfterNanos));
            return new Outcome(new Authenticator.Result("", "too many failed authentications from " + key
                    + "; try again in " + describe(retryAfterMs) + " (auth.backoff-after-failures)"), retryAfterMs);
        }
        Authenticator.Result result = null;
        try {
            result = check.get();
        } finally {
            record(key, result != null && result.accepted());
        }
        if (!result.accepted()) {
            refusals.get(listener).increment();
        }
        return new Outcome(result, 0);
    }

    private void record(String key, boolean accepted) {
        long now = nanoClock.getAsLong();
        synchronized (sources) {
            Source s = sources.get(key);
            if (s == null) {
                if (accepted) {
                    return;
                }
                s = new Source(); // forgotten meanwhile by rule B4 or B5
                sources.put(key, s);
            }
            s.checking = Math.max(0, s.checking - 1);
            if (accepted) {
                if (s.checking == 0) {
                    sources.remove(key); // rule B4
                }
                return;
            }
            s.failures++;
            s.lastRefusalNanos = now;
            if (s.failures >= threshold) {
                int doublings = Math.min(s.failures - threshold, 40);
                long backoff = initialNanos << doublings;
                s.blockedUntilNanos = now + (backoff <= 0 || backoff > maxNanos ? maxNanos : backoff); // rule B1
            }
        }
    }

    private static String key(SocketAddress remote) {
        if (remote instanceof InetSocketAddress inet && inet.getAddress() != null) {
            return inet.getAddress().getHostAddress();
        }
        return String.valueOf(remote);
    }

    private static String describe(long ms) {
        return ms < 10_000 ? ms + " ms" : (ms + 999) / 1000 + " s";
    }

    /** Refused attempts through {@code listener} since the broker started. */
    public long refusals(Listener listener) {
        return refusals.get(listener).sum();
    }

    /** Sources the table holds now (at most {@code auth.backoff-tracked-sources}). */
    public int trackedSources() {
        synchronized (sources) {
            return sources.size();
        }
    }
}
