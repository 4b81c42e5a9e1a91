package io.sluice.client;

import io.netty.util.concurrent.EventExecutor;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.UnsubscribeFrame;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the application does while a close or a handshake is under way, against the fake broker: settling after
 * Consumer.close(), closing from two threads at once, subscribing while a reconnect's HELLO_OK is on its way.
 */
class CloseAndHandshakeRacesTest {
    /**
     * An ack or a nack after Consumer.close() fails at the call and never reaches the broker, which would answer the ack
     * of a consumer it no longer knows with ERROR UNKNOWN_CONSUMER (and log it); an ack made before close() is written
     * before the UNSUBSCRIBE although its batch was not full; an ack in a transaction fails at the call too. It fails
     * if the settlements made after close() are written after the UNSUBSCRIBE.
     */
    @Test
    void aSettlementAfterTheConsumerClosedFailsAtTheCallAndNeverReachesTheBroker() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            // A batch of 2 and a minute's delay: one ack waits in the consumer, two are written at once.
            Consumer consumer = connection.subscribe("orders", new ConsumerOptions(1000, 2, Duration.ofMinutes(1)));
            broker.deliver(consumer.consumerTag(), 1, 2, 3, 4);
            Message first = consumer.receive(Duration.ofSeconds(10));
            Message second = consumer.receive(Duration.ofSeconds(10));
            Message third = consumer.receive(Duration.ofSeconds(10));
            Message fourth = consumer.receive(Duration.ofSeconds(10));
            first.ack();
            consumer.close();
            Throwable secondAck = thrownBy(second::ack);
            Throwable thirdNack = thrownBy(() -> third.nack(NackAction.REQUEUE));
            try (Transaction transaction = connection.transaction()) {
                // Its TX_ACK, written at the commit, would name a consumer the broker no longer knows.
                assertThrows(IllegalStateException.class, () -> transaction.ack(fourth));
            }
            connection.declareQueue("orders", QueueSettings.EMPTY); // a round trip: whatever those wrote arrived before
            assertEquals(List.of("ACK 1", "UNSUBSCRIBE"), broker.settlementsInOrder(),
                    "the ack made before close() goes before the UNSUBSCRIBE; nothing after it");
            assertInstanceOf(IllegalStateException.class, secondAck);
            assertEquals("cannot ack message 2: its consumer of queue orders is closed (the broker takes the message back)",
                    secondAck.getMessage());
            assertInstanceOf(IllegalStateException.class, thirdNack);
            // Not marked settled by the refused call, so refused for the same reason again, not as "already settled".
            assertEquals(secondAck.getMessage(), assertThrows(IllegalStateException.class, second::ack).getMessage());
        }
    }

    /**
     * Two threads closing the connection at once: the second returns only once the close is complete, its network
     * thread stopped and its callbacks (a handler busy with a message) returned, as after the first. It fails if the
     * second close() returns at once, while the first is still closing and the handler still runs.
     */
    @Test
    void aSecondCloseReturnsOnlyOnceTheConnectionIsClosed() throws Exception {
        try (FakeBroker broker = new FakeBroker()) {
            Connection connection = broker.connectReconnecting();
            HeldHandler handler = new HeldHandler();
            Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT, handler);
            broker.deliver(consumer.consumerTag(), 1);
            assertTrue(handler.busy.await(10, TimeUnit.SECONDS));
            Thread first = new Thread(connection::close, "test-first-close");
            first.start();
            TestWait.until(connection::isClosed); // the first close is under way: it waits for the handler
            CompletableFuture<String> secondSaw = new CompletableFuture<>();
            Thread second = new Thread(() -> {
                connection.close();
                secondSaw.complete("handler returned: " + (handler.returned.getCount() == 0) + ", network thread stopped: "
                        + ((EventExecutor) connection.loopExecutor()).isTerminated());
            }, "test-second-close");
            second.start();
            TestWait.until(() -> second.getState() == Thread.State.WAITING || second.getState() == Thread.State.TIMED_WAITING
                    || second.getState() == Thread.State.TERMINATED);
            handler.release.countDown();
            first.join(TimeUnit.SECONDS.toMillis(20));
            assertEquals("handler returned: true, network thread stopped: true", secondSaw.get(20, TimeUnit.SECONDS));
        }
    }

    /**
     * Consumer.close() from two threads at once: the second returns only once the broker answered the UNSUBSCRIBE (it
     * delivers nothing more), as the first does, not at once.
     */
    @Test
    void aSecondConsumerCloseReturnsOnlyOnceUnsubscribed() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
            broker.answerUnsubscribes = false;
            Thread first = new Thread(consumer::close, "test-first-consumer-close");
            first.start();
            TestWait.until(() -> broker.count(UnsubscribeFrame.class) == 1);
            AtomicBoolean answered = new AtomicBoolean();
            CompletableFuture<Boolean> secondSawAnswer = new CompletableFuture<>();
            Thread second = new Thread(() -> {
                consumer.close();
                secondSawAnswer.complete(answered.get());
            }, "test-second-consumer-close");
            second.start();
            TestWait.until(() -> second.getState() == Thread.State.WAITING || second.getState() == Thread.State.TIMED_WAITING
                    || second.getState() == Thread.State.TERMINATED);
            answered.set(true);
            broker.send(new OkFrame(broker.frames(UnsubscribeFrame.class).get(0).requestId()));
            first.join(TimeUnit.SECONDS.toMillis(10));
            assertTrue(secondSawAnswer.get(10, TimeUnit.SECONDS), "the second close() returned before the UNSUBSCRIBE was answered");
            assertEquals(1, broker.count(UnsubscribeFrame.class), "one UNSUBSCRIBE for both");
        }
    }

    /**
     * subscribe() called while a reconnect's HELLO_OK is on its way (the network thread held by the test while the
     * subscribe's work and the HELLO_OK both wait for it) sends its SUBSCRIBE once: the new connection subscribes it,
     * and subscribe() returns a consumer that receives. It fails if the consumer is registered by one task and its
     * SUBSCRIBE sent by a second: a HELLO_OK handled between the two would subscribe it as a consumer to resubscribe and
     * the second task would send SUBSCRIBE again (the broker refuses a tag in use); handled after both, subscribe()
     * would fail with "not connected; reconnecting".
     */
    @Test
    void aSubscribeRacingAReconnectsHelloOkIsSentOnce() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            broker.dropConnectionsAndHoldTheReconnect();
            HeldNetworkThread loop = HeldNetworkThread.hold(connection);
            Subscription subscription = subscribeInThread(connection);
            TestWait.until(() -> subscription.thread().getState() == Thread.State.TIMED_WAITING); // its work waits for the loop
            broker.answerHeldHellos(); // the HELLO_OK waits in the client's socket
            loop.release();
            Throwable failure = null;
            Consumer consumer = null;
            try {
                consumer = subscription.result().get(10, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                failure = e.getCause();
            }
            TestWait.until(connection::isConnected);
            connection.declareQueue("orders", QueueSettings.EMPTY); // a round trip: every SUBSCRIBE sent arrived
            assertEquals(1, broker.count(SubscribeFrame.class), "one SUBSCRIBE for the one consumer");
            assertEquals(null, failure == null ? null : failure.toString(), "subscribe() succeeds once the handshake completes");
            broker.deliver(consumer.consumerTag(), 7);
            assertEquals(7L, consumer.receive(Duration.ofSeconds(10)).id());
        }
    }

    /**
     * subscribe() called while a reconnect waits for a HELLO_OK that comes only after the request timeout throws
     * SluiceTimeoutException, and the handshake that completes later does not subscribe the consumer nobody holds
     * (its deliveries would go unsettled until the connection closes).
     */
    @Test
    void aSubscribeWaitingForAReconnectLongerThanTheRequestTimeoutIsNeverSent() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting(Duration.ofMillis(300))) {
            broker.dropConnectionsAndHoldTheReconnect();
            assertThrows(SluiceTimeoutException.class, () -> connection.subscribe("orders", ConsumerOptions.DEFAULT));
            broker.answerHeldHellos();
            TestWait.until(connection::isConnected);
            connection.declareQueue("orders", QueueSettings.EMPTY); // a round trip after the handshake's work
            assertEquals(0, broker.count(SubscribeFrame.class), "the abandoned consumer is not subscribed");
        }
    }

    /**
     * subscribe() that gave up while the reconnect's HELLO_OK was on its way, the network thread handling that HELLO_OK
     * before the work subscribe() queued as it gave up: the handshake subscribes nothing for it. It fails if the
     * handshake sends its SUBSCRIBE (the broker would deliver with full credit to nobody until the UNSUBSCRIBE that
     * follows).
     */
    @Test
    void aSubscribeGivenUpJustBeforeTheHandshakeIsNeverSent() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting(Duration.ofMillis(1500))) {
            broker.dropConnectionsAndHoldTheReconnect();
            Subscription subscription = subscribeInThread(connection);
            TestWait.until(() -> subscription.thread().getState() == Thread.State.TIMED_WAITING);
            CompletableFuture<Void> registered = new CompletableFuture<>();
            connection.executeOnLoop(() -> registered.complete(null)); // behind the subscribe's work, which registers the consumer
            registered.get(10, TimeUnit.SECONDS);
            HeldNetworkThread.giveUpAheadOfTheHandshake(connection, broker, subscription.result());
            TestWait.until(connection::isConnected);
            connection.declareQueue("orders", QueueSettings.EMPTY); // a round trip after the handshake's work
            assertEquals(0, broker.count(SubscribeFrame.class), "the abandoned consumer is not subscribed");
        }
    }

    /**
     * subscribe() that gave up (the request timeout) before the busy network thread took its work leaves no consumer
     * behind: none is subscribed then, nor by the next reconnect. It fails if the consumer is registered once the
     * network thread gets to it, after subscribe() threw: every later handshake would subscribe it, its deliveries
     * unsettled.
     */
    @Test
    void aSubscribeGivenUpBeforeTheNetworkThreadTookItLeavesNoConsumer() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting(Duration.ofMillis(300))) {
            HeldNetworkThread loop = HeldNetworkThread.hold(connection);
            assertThrows(SluiceTimeoutException.class, () -> connection.subscribe("orders", ConsumerOptions.DEFAULT));
            loop.release();
            broker.dropConnections();
            TestWait.until(() -> broker.count(HelloFrame.class) == 2);
            TestWait.until(connection::isConnected);
            connection.declareQueue("orders", QueueSettings.EMPTY); // a round trip after the handshake's work
            assertEquals(0, broker.count(SubscribeFrame.class), "no consumer was left to subscribe");
        }
    }

    /** A subscribe() called on a thread of the test, and what it returns or throws. */
    private record Subscription(Thread thread, CompletableFuture<Consumer> result) {
    }

    private static Subscription subscribeInThread(Connection connection) {
        CompletableFuture<Consumer> subscribed = new CompletableFuture<>();
        Thread subscriber = new Thread(() -> {
            try {
                subscribed.complete(connection.subscribe("orders", ConsumerOptions.DEFAULT));
            } catch (Throwable t) {
                subscribed.completeExceptionally(t);
            }
        }, "test-subscriber");
        subscriber.start();
        return new Subscription(subscriber, subscribed);
    }

    private static Throwable thrownBy(Runnable call) {
        try {
            call.run();
            return null;
        } catch (Throwable t) {
            return t;
        }
    }

    /** Holds the first message until released, and counts down {@link #returned} as it returns. */
    private static final class HeldHandler implements MessageHandler {
        final CountDownLatch busy = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final CountDownLatch returned = new CountDownLatch(1);

        @Override
        public void onMessage(Message message) {
            busy.countDown();
            HeldNetworkThread.awaitQuietly(release);
            returned.countDown();
        }
    }
}
