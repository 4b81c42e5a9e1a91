package io.sluice.broker;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Polls a condition under a deadline instead of sleeping a fixed time; every test that waits for a state waits here. */
public final class TestAwait {
    private TestAwait() {
    }

    public static void until(String what, BooleanSupplier condition) throws InterruptedException {
        until(what, Duration.ofSeconds(20), condition);
    }

    public static void until(String what, Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout.toMillis() + " ms waiting for: " + what);
            }
            Thread.sleep(5);
        }
    }
}
