package io.sluice.client;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Holds a connection's network thread with a task of the test, so that the work the application hands it meanwhile
 * queues up behind that task in a known order; {@link #release()} lets it go (it lets go by itself after 10 s).
 */
final class HeldNetworkThread {
    private final CountDownLatch release = new CountDownLatch(1);

    private HeldNetworkThread() {
    }

    /** Returns once the network thread runs the holding task. */
    static HeldNetworkThread hold(Connection connection) throws InterruptedException {
        HeldNetworkThread held = new HeldNetworkThread();
        CountDownLatch running = new CountDownLatch(1);
        connection.executeOnLoop(() -> {
            running.countDown();
            awaitQuietly(held.release);
        });
        assertTrue(running.await(10, TimeUnit.SECONDS));
        return held;
    }

    void release() {
        release.countDown();
    }

    static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
