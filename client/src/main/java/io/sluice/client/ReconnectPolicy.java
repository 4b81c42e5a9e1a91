package io.sluice.client;

import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link Connection} reconnects after losing the broker: after {@code initialDelay}, then each delay
 * {@code multiplier} times the previous one up to {@code maxDelay}, each randomised by up to
 * {@code jitter} (a fraction, 0.2 = plus or minus 20 %) so that many clients do not reconnect in step.
 * Attempts continue until the connection is closed. Immutable.
 */
public record ReconnectPolicy(boolean enabled, Duration initialDelay, Duration maxDelay, double multiplier,
                              double jitter) {
    /** On: 100 ms, doubling, at most 30 s, 20 % jitter. */
    public static final ReconnectPolicy DEFAULT =
            new ReconnectPolicy(true, Duration.ofMillis(100), Duration.ofSeconds(30), 2.0, 0.2);
    /** Off: a lost connection fails everything in flight and stays closed. */
    public static final ReconnectPolicy DISABLED =
            new ReconnectPolicy(false, Duration.ofMillis(100), Duration.ofSeconds(30), 2.0, 0.2);

    public ReconnectPolicy {
        Objects.requireNonNull(initialDelay, "initialDelay");
        Objects.requireNonNull(maxDelay, "maxDelay");
        if (initialDelay.isNegative() || initialDelay.isZero()) {
            throw new IllegalArgumentException("initialDelay " + initialDelay + " must be positive");
        }
        if (maxDelay.compareTo(initialDelay) < 0) {
            throw new IllegalArgumentException("maxDelay " + maxDelay + " is below initialDelay " + initialDelay);
        }
        if (multiplier < 1.0) {
            throw new IllegalArgumentException("multiplier " + multiplier + " is below 1.0");
        }
        if (jitter < 0.0 || jitter >= 1.0) {
            throw new IllegalArgumentException("jitter " + jitter + " is outside [0, 1)");
        }
    }
}
