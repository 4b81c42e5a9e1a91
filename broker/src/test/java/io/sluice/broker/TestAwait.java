package io.sluice.broker;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
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
     * Holds {@code thread} (a single-threaded executor: a queue's, the coordinator's) with a task that waits until
     * {@code release} opens, up to 60 s; returns once the task runs, so nothing queued after it runs before the release.
     */
    public static void hold(Executor thread, CountDownLatch release) throws InterruptedException {
        if (!holdLater(thread, release).await(10, TimeUnit.SECONDS)) {
            throw new AssertionError("the executor was not held within 10 s");
        }
    }

    /** As {@link #hold}, without waiting: the latch returned opens once the task holds {@code thread}. */
    public static CountDownLatch holdLater(Executor thread, CountDownLatch release) {
        CountDownLatch holding = new CountDownLatch(1);
        thread.execute(() -> {
            holding.countDown();
            try {
                release.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        return holding;
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
