package io.sluice.broker;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;

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

    /**
     * Reads a value until {@code done} accepts it, under a deadline, and returns it; for reads that throw
     * checked exceptions (an HTTP call, a CLI run). The failure names the last value read.
     */
    public static <T> T value(String what, Duration timeout, Callable<T> read, Predicate<T> done) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            T value = read.call();
            if (done.test(value)) {
                return value;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout.toMillis() + " ms waiting for " + what + "; last read: "
                        + (value instanceof Object[] array ? java.util.Arrays.deepToString(array) : String.valueOf(value)));
            }
            Thread.sleep(5);
        }
    }
}
