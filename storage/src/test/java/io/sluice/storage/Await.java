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
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout + " " + unit + " waiting for: " + what);
            }
            Thread.sleep(5);
        }
    }
}
