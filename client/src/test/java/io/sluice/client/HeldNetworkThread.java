package io.sluice.client;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
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

    /**
     * Holds the network thread while {@code call}, waiting on a thread of the test for longer than the loop's task
     * quantum (its request timeout), gives up, then has {@code broker} answer the HELLOs it holds and releases the
     * thread, which handles that HELLO_OK before the work the call queued as it gave up: 200 tasks that do nothing are
     * queued between the two, and Netty's loop, having run its tasks past the quantum
     * (io.netty.eventLoop.maxTaskProcessingQuantumMs, 1 s by default, looked at every 64 tasks), turns to its sockets.
     */
    static void giveUpAheadOfTheHandshake(Connection connection, FakeBroker broker, CompletableFuture<?> call)
            throws InterruptedException {
        HeldNetworkThread held = hold(connection);
        for (int i = 0; i < 200; i++) {
            connection.executeOnLoop(() -> { });
        }
        ExecutionException gaveUp = assertThrows(ExecutionException.class, () -> call.get(10, TimeUnit.SECONDS));
        assertEquals(SluiceTimeoutException.class, gaveUp.getCause().getClass());
        broker.answerHeldHellos();
        held.release();
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
