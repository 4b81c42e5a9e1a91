package io.sluice.client;

import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The dispatch pool refuses work while the connection is open (it cannot start a thread): the outcomes it was handed
 * still reach the application, unchanged, and the application's code still runs off the network thread, on a thread of
 * the client's own ({@code sluice-client-dispatch-fallback}). It fails if a refused completion runs on the network
 * thread, or a refused handler task is thrown there, its consumer never called again.
 */
class RefusedCallbackPoolTest {
    private final FakeBroker broker = new FakeBroker();
    private Connection connection;

    /** The pool refuses from the first callback on: the handshake's completion too, which must still happen. */
    @BeforeEach
    void connectWithARefusingPool() {
        connection = broker.connectReconnecting(pool -> task -> {
            throw new RejectedExecutionException("the dispatch pool cannot start a thread");
        });
    }

    @AfterEach
    void stop() {
        connection.close();
        broker.close();
    }

    @Test
    void aRequestsFutureCompletesWithItsAnswerOffTheNetworkThread() throws Exception {
        CompletableFuture<String> completedOn = new CompletableFuture<>();
        HeldNetworkThread held = HeldNetworkThread.hold(connection);
        CompletableFuture<Long> declared = connection.declareQueueAsync("orders", QueueSettings.EMPTY);
        declared.whenComplete((count, failure) -> completedOn.complete(Thread.currentThread().getName()));
        held.release();
        // Waited for through the callback first: a thread waiting in get() may run a future's callbacks itself.
        assertFallbackThread(completedOn.get(10, TimeUnit.SECONDS));
        assertEquals(0L, declared.get(10, TimeUnit.SECONDS), "the broker's answer, not the pool's refusal");
    }

    @Test
    void aProducersConfirmCompletesItsFutureOffTheNetworkThread() throws Exception {
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
        CompletableFuture<String> completedOn = new CompletableFuture<>();
        HeldNetworkThread held = HeldNetworkThread.hold(connection);
        CompletableFuture<Void> confirmed = producer.sendAsync(new byte[] {1});
        confirmed.whenComplete((ignored, failure) -> completedOn.complete(Thread.currentThread().getName()));
        held.release();
        assertFallbackThread(completedOn.get(10, TimeUnit.SECONDS));
        confirmed.get(10, TimeUnit.SECONDS);
    }

    @Test
    void aHandlerIsCalledOffTheNetworkThreadAndKeepsBeingCalled() throws Exception {
        CompletableFuture<String> first = new CompletableFuture<>();
        CompletableFuture<String> second = new CompletableFuture<>();
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT, message -> {
            String payload = new String(message.payload(), StandardCharsets.UTF_8);
            (first.isDone() ? second : first).complete(payload + " on " + Thread.currentThread().getName());
            message.ack();
        });
        broker.deliver(consumer.consumerTag(), 1);
        assertTrue(first.get(10, TimeUnit.SECONDS).startsWith("m1 on sluice-client-dispatch-fallback"), first.get());
        broker.deliver(consumer.consumerTag(), 2);
        assertTrue(second.get(10, TimeUnit.SECONDS).startsWith("m2 on sluice-client-dispatch-fallback"), second.get());
    }

    private static void assertFallbackThread(String thread) {
        assertTrue(thread.startsWith("sluice-client-dispatch-fallback"), "completed on " + thread);
    }
}
