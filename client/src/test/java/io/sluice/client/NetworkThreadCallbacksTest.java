package io.sluice.client;

import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.FlowFrame;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.UnsubscribeFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link ConnectionOptions#callbacksOnNetworkThread()}: where callbacks run, and the blocking calls it refuses. */
class NetworkThreadCallbacksTest {
    private final FakeBroker broker = new FakeBroker();
    private Connection connection;

    @AfterEach
    void stop() {
        if (connection != null) {
            connection.close();
        }
        broker.close();
    }

    private Connection connect(boolean callbacksOnNetworkThread) {
        connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .requestTimeout(Duration.ofSeconds(5)).callbacksOnNetworkThread(callbacksOnNetworkThread).build());
        return connection;
    }

    @Test
    void shouldRunHandlersConfirmCallbacksAndFlowListenersOnTheNetworkThreadWhenAskedTo() throws Exception {
        Map<String, String> threads = callbackThreads(connect(true));
        assertEquals(3, threads.size(), threads.toString());
        threads.forEach((callback, thread) ->
                assertTrue(thread.startsWith("sluice-client-io"), callback + " ran on " + thread));
        assertTrue(Thread.getAllStackTraces().keySet().stream()
                        .noneMatch(thread -> thread.getName().startsWith("sluice-client-dispatch")),
                "no dispatch thread runs");
        assertTrue(!(connection.dispatchExecutor() instanceof java.util.concurrent.ExecutorService),
                "no dispatch pool is made");
    }

    @Test
    void shouldRunCallbacksOnTheDispatchPoolByDefault() throws Exception {
        Map<String, String> threads = callbackThreads(connect(false));
        assertEquals(3, threads.size(), threads.toString());
        threads.forEach((callback, thread) ->
                assertTrue(thread.startsWith("sluice-client-dispatch"), callback + " ran on " + thread));
    }

    /** The thread each kind of callback ran on: a handler, a callback chained on a send, a flow listener. */
    private Map<String, String> callbackThreads(Connection connection) throws Exception {
        Map<String, String> threads = new ConcurrentHashMap<>();
        CountDownLatch called = new CountDownLatch(3);
        broker.confirmPublishes = false;
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT.withFlowListener(
                (queue, state, reason) -> {
                    threads.put("flow listener", Thread.currentThread().getName());
                    called.countDown();
                }));
        // Chained before the confirm exists, so the completing thread runs it.
        CompletableFuture<Void> confirmed = producer.sendAsync(new byte[] {1}).thenRun(() -> {
            threads.put("confirm callback", Thread.currentThread().getName());
            called.countDown();
        });
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT, message -> {
            threads.put("handler", Thread.currentThread().getName());
            message.ack();
            called.countDown();
        });
        broker.deliver(consumer.consumerTag(), 1);
        broker.send(new FlowFrame("orders", FlowState.SLOWED, "quotaSoftMessages: 2 ready, limit 1"));
        TestWait.until(() -> broker.publishedSequences.size() == 1);
        broker.send(new ConfirmFrame(producer.producerId(), List.of(IdRange.single(1))));
        assertTrue(called.await(10, TimeUnit.SECONDS), "callbacks called: " + threads);
        confirmed.get(5, TimeUnit.SECONDS);
        return threads;
    }

    /**
     * On the network thread, a confirm callback that sends the next message, with maxInFlight 1, is not refused for the
     * settlement it runs in: a chain of 20 sends, each from the callback of the one before, completes.
     */
    @Test
    void shouldLetAConfirmCallbackOnTheNetworkThreadSendTheNextMessage() throws Exception {
        connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .requestTimeout(Duration.ofSeconds(5)).callbacksOnNetworkThread(true).build());
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT.withMaxInFlight(1));
        CompletableFuture<Integer> chainEnd = new CompletableFuture<>();
        ProducerSettlementOrderTest.sendChained(producer, 1, 20, chainEnd);
        assertEquals(20, chainEnd.get(10, TimeUnit.SECONDS));
    }

    @Test
    void shouldRefuseBlockingCallsFromACallbackOnTheNetworkThreadInsteadOfWaitingForIt() throws Exception {
        Connection connection = connect(true);
        broker.confirmPublishes = false;
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT.withMaxInFlight(1));
        List<Object> outcomes = new CopyOnWriteArrayList<>();
        List<Connection> opened = new CopyOnWriteArrayList<>();
        CountDownLatch handled = new CountDownLatch(1);
        Consumer[] self = new Consumer[1];
        self[0] = connection.subscribe("orders", ConsumerOptions.DEFAULT, message -> {
            outcomes.add(outcome(() -> producer.send(new byte[] {1})));
            outcomes.add(outcome(() -> connection.declareQueue("other", QueueSettings.EMPTY)));
            outcomes.add(outcome(() -> opened.add(Connection.connect(ConnectionOptions.builder().host("127.0.0.1")
                    .port(broker.port()).build())))); // refused too: it waits for a handshake
            outcomes.add(producer.sendAsync(new byte[] {2})); // takes the one in-flight slot
            outcomes.add(producer.sendAsync(new byte[] {3})); // finds none, and must not wait for it
            self[0].close(); // unsubscribes without waiting for the broker's answer
            handled.countDown();
        });
        broker.deliver(self[0].consumerTag(), 1, 2);
        assertTrue(handled.await(10, TimeUnit.SECONDS), "the handler finished");
        opened.forEach(Connection::close);

        for (Object refused : outcomes.subList(0, 3)) {
            IllegalStateException e = assertInstanceOf(IllegalStateException.class, refused);
            assertTrue(e.getMessage().contains("network thread"), e.getMessage());
        }
        CompletableFuture<?> admitted = (CompletableFuture<?>) outcomes.get(3);
        CompletableFuture<?> full = (CompletableFuture<?>) outcomes.get(4);
        ExecutionException failure = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                () -> full.get(5, TimeUnit.SECONDS));
        assertInstanceOf(SluiceException.class, failure.getCause());
        assertTrue(failure.getCause().getMessage().contains("in-flight slots taken"), failure.getCause().getMessage());
        TestWait.until(() -> broker.count(UnsubscribeFrame.class) == 1);
        // The admitted send went out; the handler was not called for message 2 after close().
        TestWait.until(() -> broker.publishedSequences.size() == 1);
        assertEquals(List.of(1L), List.copyOf(broker.publishedSequences));
        assertEquals(5, outcomes.size(), "the handler ran once: " + outcomes);
        broker.send(new ConfirmFrame(producer.producerId(), List.of(IdRange.single(1))));
        admitted.get(5, TimeUnit.SECONDS);
    }

    @Test
    void shouldRefuseABlockingCommitInAHandlerOnTheNetworkThreadAndCommitAsynchronously() throws Exception {
        Connection connection = connect(true);
        CompletableFuture<Object> refused = new CompletableFuture<>();
        CompletableFuture<CompletableFuture<Void>> committed = new CompletableFuture<>();
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT, message -> {
            Transaction transaction = connection.transaction();
            transaction.ack(message);
            transaction.publish("invoices", new byte[] {1});
            refused.complete(outcome(transaction::commit));
            committed.complete(transaction.commitAsync());
        });
        broker.deliver(consumer.consumerTag(), 1);
        IllegalStateException blocking = assertInstanceOf(IllegalStateException.class, refused.get(10, TimeUnit.SECONDS));
        assertTrue(blocking.getMessage().contains("network thread"), blocking.getMessage());
        committed.get(10, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS);
        assertEquals(1, broker.count(io.sluice.protocol.TxCommitFrame.class));
    }

    @Test
    void shouldRefuseABlockingCallForAnotherConnectionFromACallbackOnANetworkThread() throws Exception {
        Connection consuming = connect(true);
        try (Connection publishing = Connection.connect(ConnectionOptions.builder().host("127.0.0.1")
                .port(broker.port()).requestTimeout(Duration.ofSeconds(5)).build())) {
            Producer producer = publishing.createProducer("out", ProducerOptions.DEFAULT);
            CompletableFuture<Object> outcome = new CompletableFuture<>();
            Consumer consumer = consuming.subscribe("in", ConsumerOptions.DEFAULT,
                    message -> outcome.complete(outcome(() -> producer.send(new byte[] {1}))));
            broker.deliver(consumer.consumerTag(), 1);
            IllegalStateException refused = assertInstanceOf(IllegalStateException.class,
                    outcome.get(10, TimeUnit.SECONDS), "send() for another connection, from this one's network thread");
            assertTrue(refused.getMessage().contains("network thread"), refused.getMessage());
        }
    }

    @Test
    void shouldKeepTheConnectionAndLaterCallbacksWhenACallbackThrowsOnTheNetworkThread() throws Exception {
        Connection connection = connect(true);
        List<String> flows = new CopyOnWriteArrayList<>();
        connection.createProducer("orders", ProducerOptions.DEFAULT.withFlowListener((queue, state, reason) -> {
            flows.add(state.name());
            throw new IllegalStateException("listener bug");
        }));
        List<Long> handled = new CopyOnWriteArrayList<>();
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT, message -> {
            handled.add(message.id());
            if (message.id() == 1) {
                throw new AssertionError("handler bug");
            }
            message.ack();
        });
        broker.send(new FlowFrame("orders", FlowState.SLOWED, "quotaSoftMessages: 2 ready, limit 1"));
        broker.deliver(consumer.consumerTag(), 1);
        broker.deliver(consumer.consumerTag(), 2);
        broker.send(new FlowFrame("orders", FlowState.FREE, ""));
        TestWait.until(() -> flows.size() == 2 && handled.size() == 2);
        assertEquals(List.of("SLOWED", "FREE"), flows);
        assertEquals(List.of(1L, 2L), handled);
        assertTrue(connection.isConnected(), "the connection stayed up");
        assertEquals(1, broker.count(io.sluice.protocol.HelloFrame.class), "and was never re-established");
    }

    private static Object outcome(Runnable call) {
        try {
            call.run();
            return "returned";
        } catch (RuntimeException e) {
            return e;
        }
    }
}
