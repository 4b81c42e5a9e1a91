package io.sluice.client;

import io.sluice.protocol.FlowFrame;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.ProducerInitFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How what the application ends (a producer, a consumer, the connection) meets a reconnect or the messages still on
 * their way, against the fake broker.
 */
class ClientEndingsTest {
    /**
     * A named producer closed while its resume after a reconnect waits for the broker's answer keeps its unconfirmed
     * messages (close() lets them complete as the broker answers): once resumed they are sent again and confirmed.
     * It fails if the answer to a closed producer's resume is dropped: the producer would hold its messages back for
     * good, their futures never completed.
     */
    @Test
    void aNamedProducerClosedWhileItsResumeWaitsStillResendsItsMessages() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            broker.confirmPublishes = false;
            Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT.withName("billing"));
            CompletableFuture<Void> pending = producer.sendAsync(new byte[] {1});
            TestWait.until(() -> broker.publishedSequences.size() == 1);
            broker.holdProducerResumes = true;
            broker.confirmPublishes = true;
            broker.dropConnections();
            TestWait.until(() -> broker.count(ProducerInitFrame.class) == 2); // the resume, held
            producer.close();
            connection.declareQueue("orders", QueueSettings.EMPTY); // a round trip: the close reached the network thread
            broker.answerHeldProducerResumes();
            pending.get(10, TimeUnit.SECONDS);
            assertEquals(List.of(1L, 1L), List.copyOf(broker.publishedSequences), "sent again, with its sequence, once resumed");
        }
    }

    /**
     * A handler busy with the first message of a DELIVER when the connection is closed is not called for the others:
     * the consumer ended with the connection, and their acks could reach no broker (it takes them back). It fails if
     * the dispatch task goes on handing the frame's other messages to the handler after the consumer ended.
     */
    @Test
    void aHandlerIsNotCalledAfterItsConnectionClosed() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            BusyHandler handler = new BusyHandler();
            Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT, handler);
            broker.deliver(consumer.consumerTag(), 1, 2, 3);
            assertTrue(handler.busy.await(10, TimeUnit.SECONDS));
            Thread closing = new Thread(connection::close, "test-closing");
            closing.start();
            TestWait.until(() -> consumer.failure() != null); // ended by the close, on the network thread
            handler.release.countDown();
            closing.join(TimeUnit.SECONDS.toMillis(10));
            assertEquals(List.of(1L), List.copyOf(handler.handled), "only the message being handled when the connection closed");
        }
    }

    /**
     * A blocked timeout too long to count in nanoseconds ("never", in practice) is taken as that long. Counted as
     * given, the FLOW BLOCKED would throw on the network thread computing it (Duration.toNanos overflows): the producer
     * would be closed and its messages failed, and a producer created once the connection had heard BLOCKED never
     * created.
     */
    @Test
    void aBlockedTimeoutTooLongForNanosecondsMeansNeverAndKeepsTheProducer() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            ProducerOptions never = ProducerOptions.DEFAULT.withBlockedTimeout(java.time.Duration.ofDays(365L * 1000));
            Producer producer = connection.createProducer("orders", never);
            broker.send(new FlowFrame("orders", FlowState.BLOCKED, "quotaHardMessages: 10 ready, limit 10"));
            connection.declareQueue("orders", QueueSettings.EMPTY); // a round trip: the FLOW was handled
            CompletableFuture<Void> held = producer.sendAsync(new byte[] {1});
            Producer later = connection.createProducer("orders", never.withName("billing")); // starts BLOCKED
            CompletableFuture<Void> heldToo = later.sendAsync(new byte[] {2});
            broker.send(new FlowFrame("orders", FlowState.FREE, "below the resume level"));
            held.get(10, TimeUnit.SECONDS);
            heldToo.get(10, TimeUnit.SECONDS);
            assertEquals(2, broker.publishedSequences.size(), "both held messages sent once FREE, neither producer closed");
        }
    }

    /**
     * A handler busy when the connection is lost is not handed the rest of that connection's deliveries once it
     * reconnected: the broker took them back and delivers them again on the new subscription, and their acks would be
     * dropped. A pull consumer drops them too (its received messages are cleared at the reconnect); a handler must not
     * process each of them twice.
     */
    @Test
    void aHandlerIsNotHandedTheDeliveriesOfALostConnectionAfterReconnecting() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            BusyHandler handler = new BusyHandler();
            Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT, handler);
            broker.deliver(consumer.consumerTag(), 1, 2, 3);
            assertTrue(handler.busy.await(10, TimeUnit.SECONDS));
            broker.dropConnections();
            TestWait.until(() -> broker.count(io.sluice.protocol.SubscribeFrame.class) == 2); // subscribed again
            handler.release.countDown();
            broker.deliver(consumer.consumerTag(), 4); // on the new connection, queued behind 2 and 3
            TestWait.until(() -> handler.handled.contains(4L));
            assertEquals(List.of(1L, 4L), List.copyOf(handler.handled), "the busy one, then the new connection's; not the old ones");
        }
    }

    /**
     * A wait of "forever" (ChronoUnit.FOREVER, Long.MAX_VALUE seconds) waits for the message or the confirm. Before,
     * receive and send threw ArithmeticException, counting it in nanoseconds, without waiting at all.
     */
    @Test
    void receiveAndSendWaitForeverWhenAskedTo() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            java.time.Duration forever = java.time.temporal.ChronoUnit.FOREVER.getDuration();
            Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
            broker.deliver(consumer.consumerTag(), 7);
            assertEquals(7L, consumer.receive(forever).id());
            Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
            producer.send(new byte[] {1}, List.of(), forever);
            assertEquals(List.of(1L), List.copyOf(broker.publishedSequences));
        }
    }

    /** Connected to {@code broker}, reconnecting only after an hour: a test sees the client between a loss and its reconnect. */
    private static Connection connectReconnectingLate(FakeBroker broker) {
        return Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .requestTimeout(java.time.Duration.ofSeconds(5))
                .reconnectPolicy(new ReconnectPolicy(true, java.time.Duration.ofHours(1), java.time.Duration.ofHours(1), 2.0, 0.0))
                .build());
    }

    /** Waits until the client's network thread saw its connection lost. */
    private static void awaitLossSeen(Connection connection) {
        TestWait.until(() -> {
            CompletableFuture<Boolean> lost = new CompletableFuture<>();
            connection.executeOnLoop(() -> lost.complete(connection.activeChannel() == null));
            return lost.join();
        });
    }

    /**
     * Between the loss of a connection and the next HELLO_OK (the reconnect backoff, up to its max delay, or for as
     * long as the broker stays down) the handler is not handed the lost connection's deliveries queued behind the one
     * it is busy with, though the session changes only at the HELLO_OK: their acks would be dropped and the broker
     * would deliver them again, so each would be processed twice.
     */
    @Test
    void aHandlerIsNotHandedTheDeliveriesOfALostConnectionWhileReconnecting() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = connectReconnectingLate(broker)) {
            BusyHandler handler = new BusyHandler();
            Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT, handler);
            broker.deliver(consumer.consumerTag(), 1, 2, 3);
            assertTrue(handler.busy.await(10, TimeUnit.SECONDS));
            broker.dropConnections();
            awaitLossSeen(connection);
            handler.release.countDown();
            // Behind the DELIVER's dispatch task on the same serial executor: runs once it handled (or skipped) 2 and 3.
            java.lang.reflect.Field field = Consumer.class.getDeclaredField("handlerExecutor");
            field.setAccessible(true);
            java.util.concurrent.CountDownLatch drained = new java.util.concurrent.CountDownLatch(1);
            ((java.util.concurrent.Executor) field.get(consumer)).execute(drained::countDown);
            assertTrue(drained.await(10, TimeUnit.SECONDS));
            assertEquals(List.of(1L), List.copyOf(handler.handled), "the lost connection's 2 and 3 are delivered again; not handled now");
        }
    }

    /** The same for a pull consumer, whose received messages are only cleared at the HELLO_OK. */
    @Test
    void receiveDoesNotReturnTheDeliveriesOfALostConnectionWhileReconnecting() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = connectReconnectingLate(broker)) {
            Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
            broker.deliver(consumer.consumerTag(), 1, 2);
            assertEquals(1L, consumer.receive(java.time.Duration.ofSeconds(10)).id()); // 2 is received too: same frame
            broker.dropConnections();
            awaitLossSeen(connection);
            Message stale = consumer.receive(java.time.Duration.ZERO);
            assertEquals(null, stale == null ? null : stale.id(), "2 belongs to the lost connection: its ack is dropped, the broker delivers it again");
        }
    }

    /**
     * A request timeout of "forever" (the blocking calls' wait saturates) lets requests be answered: the network thread
     * counts it in milliseconds registering the request, where Duration.toMillis would throw and fail every request.
     */
    @Test
    void aRequestTimeoutOfForeverLetsRequestsBeAnswered() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = Connection.connect(ConnectionOptions.builder()
                .host("127.0.0.1").port(broker.port()).requestTimeout(java.time.temporal.ChronoUnit.FOREVER.getDuration()).build())) {
            // Bounded here: should registering the request throw, the DECLARE's future would never complete and the
            // saturated wait would never end.
            CompletableFuture.runAsync(() -> connection.declareQueue("orders", QueueSettings.EMPTY)).get(10, TimeUnit.SECONDS);
            Consumer consumer = CompletableFuture.supplyAsync(() -> connection.subscribe("orders", ConsumerOptions.DEFAULT))
                    .get(10, TimeUnit.SECONDS);
            broker.deliver(consumer.consumerTag(), 1);
            assertEquals(1L, consumer.receive(java.time.Duration.ofSeconds(10)).id());
        }
    }

    /** Records each message it is handed, and holds the first until released. */
    private static final class BusyHandler implements MessageHandler {
        final java.util.Queue<Long> handled = new java.util.concurrent.ConcurrentLinkedQueue<>();
        final java.util.concurrent.CountDownLatch busy = new java.util.concurrent.CountDownLatch(1);
        final java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);

        @Override
        public void onMessage(Message message) {
            handled.add(message.id());
            busy.countDown();
            try {
                release.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
