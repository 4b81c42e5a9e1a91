package io.sluice.client.internal;

import java.util.function.DoubleSupplier;

/**
 * Exponential reconnect delays with jitter: attempt n waits {@code min(max, initial * multiplier^n)}, scaled
 * by a random factor in {@code [1 - jitter, 1 + jitter]}. Not thread-safe: one per connection, used on its
 * network thread.
 */
public final class Backoff {
    private final long initialMillis;
    private final long maxMillis;
    private final double multiplier;
    private final double jitter;
    private final DoubleSupplier random;
    private int attempt;

    /** @param random supplies uniform values in [0, 1); injected so tests are repeatable */
    public Backoff(long initialMillis, long maxMillis, double multiplier, double jitter, DoubleSupplier random) {
        this.initialMillis = initialMillis;
        this.maxMillis = maxMillis;
        this.multiplier = multiplier;
        this.jitter = jitter;
        this.random = random;
    }

    /** The delay before the next attempt; each call counts one attempt. */
    public long nextDelayMillis() {
        double base = Math.min(maxMillis, initialMillis * Math.pow(multiplier, attempt));
        if (attempt < 64) {
            attempt++;
        }
        double factor = 1.0 + jitter * (2.0 * random.getAsDouble() - 1.0);
        return Math.max(1, Math.min(maxMillis, Math.round(base * factor)));
    }

    /** Starts over after a successful connection. */
    public void reset() {
        attempt = 0;
    }
}
