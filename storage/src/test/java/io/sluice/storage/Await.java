package io.sluice.storage;

import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** Polls a condition under a deadline instead of sleeping a fixed time. */
public final class Await {
    private Await() {
    }

    public static void until(String what, BooleanSupplier condition) throws InterruptedException {
        until(what, condition, 30, TimeUnit.SECONDS);
    }

    public static void until(String what, BooleanSupplier condition, long timeout, TimeUnit unit) throws InterruptedException {
        if (!within(condition, timeout, unit)) {
            throw new AssertionError("timed out after " + timeout + " " + unit + " waiting for: " + what);
        }
    }

    /** Whether {@code condition} held within {@code timeout}: for a wait whose end is no failure (a report's extra detail). */
    public static boolean within(BooleanSupplier condition, long timeout, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(5);
        }
        return true;
    }
}
