package io.sluice.broker;

import java.util.function.BooleanSupplier;

/** Polls a condition under a deadline instead of sleeping a fixed time. */
final class TestAwait {
    private TestAwait() {
    }

    static void until(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for: " + what);
            }
            Thread.sleep(5);
        }
    }
}
