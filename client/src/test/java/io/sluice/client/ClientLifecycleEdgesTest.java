package io.sluice.client;

import io.sluice.protocol.FlowFrame;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.MessageHeader;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishCreditFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.UnsubscribeFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Edges of a producer's and a subscription's life, against the fake broker: a message larger than
 * the whole byte window, a producer closed while its queue is blocked, a SUBSCRIBE answered after its timeout.
 */
class ClientLifecycleEdgesTest {
    private FakeBroker broker;
    private Connection connection;

    private void start(Duration requestTimeout) {
        connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .requestTimeout(requestTimeout).reconnectPolicy(ReconnectPolicy.DISABLED).build());
    }

    @AfterEach
    void stop() {
        if (connection != null) {
            connection.close();
        }
        broker.close();
    }

    /**
     * The broker grants 1,024 window bytes (its minimum for broker.publish-window-bytes) and takes larger messages:
     * one of 2,048 bytes never fits, so it goes once the window is whole instead of waiting for ever with every later
     * message of its producer behind it.
     */
    @Test
    void aMessageLargerThanTheWholeByteWindowIsSentOnceTheWindowIsWhole() throws Exception {
        broker = new FakeBroker();
        broker.publishWindowBytes = 1024;
        start(Duration.ofSeconds(5));
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
        CompletableFuture<Void> big = producer.sendAsync(new byte[2048]);
        big.get(10, TimeUnit.SECONDS);
        assertEquals(1, broker.publishedSequences.size(), "the large message was sent, and confirmed");
    }

    /**
     * A broker that counts headers in the publish window (WINDOW_COUNTS_HEADERS) gives back what each message's headers
     * and payload took: a client that took its payload alone sent more than the window, which the broker found past it.
     * Here the first message (a header of 900 bytes, 10 payload bytes) leaves 107 of 1,024 bytes: the second waits for
     * its credit.
     */
    @Test
    void headersTakeThePublishWindowOfABrokerThatCountsThem() throws Exception {
        broker = new FakeBroker();
        broker.publishWindowBytes = 1024;
        start(Duration.ofSeconds(5));
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
        List<MessageHeader> header = List.of(new MessageHeader("h", new byte[900]));
        producer.sendAsync(new byte[10], header).get(10, TimeUnit.SECONDS);
        CompletableFuture<Void> second = producer.sendAsync(new byte[10], header);
        connection.declareQueue("orders", QueueSettings.EMPTY); // a round trip: the second would have been written by now
        assertEquals(1, broker.publishedSequences.size(), "the second message waits for the window");
        broker.send(new PublishCreditFrame(1, 2 + 1 + 4 + 900 + 10)); // the first message's headers and payload
        second.get(10, TimeUnit.SECONDS);
        assertEquals(2, broker.publishedSequences.size());
    }

    /** A broker from before WINDOW_COUNTS_HEADERS counts payload alone: so does the client, or their counts would part. */
    @Test
    void headersTakeNoPublishWindowOfABrokerThatPredatesCountingThem() throws Exception {
        broker = new FakeBroker();
        broker.publishWindowBytes = 1024;
        broker.servedCapabilities = HelloFrame.CAPABILITY_TRANSACTIONS;
        start(Duration.ofSeconds(5));
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
        List<MessageHeader> header = List.of(new MessageHeader("h", new byte[900]));
        producer.sendAsync(new byte[10], header).get(10, TimeUnit.SECONDS);
        producer.sendAsync(new byte[10], header).get(10, TimeUnit.SECONDS);
        assertEquals(2, broker.publishedSequences.size());
    }

    /**
     * A producer closed while its queue is BLOCKED kept its blocked timer, which ran every 100 ms for the connection's
     * life and, at each tick, removed whatever producer had its id: a new instance of the same name lost its confirms.
     */
    @Test
    void aProducerClosedWhileBlockedLeavesANewInstanceOfItsNameAlone() {
        broker = new FakeBroker();
        start(Duration.ofSeconds(5));
        Producer first = connection.createProducer("orders", ProducerOptions.DEFAULT.withName("order-service"));
        broker.send(new FlowFrame("orders", FlowState.BLOCKED, "quotaHardMessages: 10 ready, limit 10"));
        connection.declareQueue("orders", QueueSettings.EMPTY); // a round trip: the FLOW was handled
        first.close();
        connection.declareQueue("orders", QueueSettings.EMPTY); // a round trip: the closed producer was removed
        // FREE again, heard by the connection (a new producer starts from what it heard) but not by the closed one.
        broker.send(new FlowFrame("orders", FlowState.FREE, "below the resume level"));
        connection.declareQueue("orders", QueueSettings.EMPTY);
        Producer second = connection.createProducer("orders", ProducerOptions.DEFAULT.withName("order-service"));
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(1); // ten of the old timer's ticks
        int sent = 0;
        while (System.nanoTime() - end < 0) {
            second.send(new byte[] {1}, Duration.ofSeconds(2)); // timed out once the new instance was unregistered
            sent++;
        }
        assertTrue(sent > 0);
    }

    /**
     * A SUBSCRIBE answered after the request timeout (a slow broker) is live there with full credit, and the client,
     * which threw and forgot the tag, would settle nothing it delivers: the client unsubscribes it, which gives its
     * deliveries back.
     */
    @Test
    void aSubscribeThatTimedOutIsUnsubscribed() {
        broker = new FakeBroker();
        broker.answerSubscribes = false;
        start(Duration.ofMillis(300));
        assertThrows(SluiceTimeoutException.class, () -> connection.subscribe("orders", ConsumerOptions.DEFAULT, message -> message.ack()));
        SubscribeFrame subscribe = broker.frames(SubscribeFrame.class).get(0);
        broker.send(new OkFrame(subscribe.requestId())); // the late answer: subscribed
        // Waited for, not ordered by a round trip: the UNSUBSCRIBE is written by a continuation of the answer, a task of
        // the network thread that may run after a request the test sends next (seen once in CI).
        TestWait.until(() -> !broker.frames(UnsubscribeFrame.class).isEmpty());
        connection.declareQueue("orders", QueueSettings.EMPTY); // a round trip: no second UNSUBSCRIBE went before it
        assertEquals(1, broker.frames(UnsubscribeFrame.class).stream()
                .filter(u -> u.consumerTag() == subscribe.consumerTag()).count(), "the timed-out subscription is ended");
    }

    /**
     * With reconnecting off, a lost connection ends its consumers with ConnectionLostException, a waiting receive too,
     * rather than leave failure() null and receive() returning null for ever, as for an empty queue.
     */
    @Test
    void aConsumerOfAConnectionLostForGoodSaysSo() {
        broker = new FakeBroker();
        start(Duration.ofSeconds(5));
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
        WaitingReceive waiting = new WaitingReceive(consumer);
        broker.dropConnections();
        assertInstanceOf(ConnectionLostException.class, waiting.thrown());
        assertInstanceOf(ConnectionLostException.class, consumer.failure());
        assertThrows(ConnectionLostException.class, () -> consumer.receive(Duration.ofMillis(100)));
        assertThrows(ConnectionLostException.class, () -> connection.declareQueue("orders", QueueSettings.EMPTY));
    }

    /**
     * createProducer on a connection lost with reconnecting off throws ConnectionLostException, as subscribe() does,
     * rather than return a producer whose every send fails.
     */
    @Test
    void aProducerOfAConnectionLostForGoodIsRefusedAtCreation() {
        broker = new FakeBroker();
        start(Duration.ofSeconds(5));
        broker.dropConnections();
        TestWait.until(() -> !connection.isConnected());
        ConnectionLostException refused = assertThrows(ConnectionLostException.class,
                () -> connection.createProducer("orders", ProducerOptions.DEFAULT));
        assertEquals("create producer for orders failed: the connection to 127.0.0.1:" + broker.port()
                + " was lost and reconnecting is off", refused.getMessage());
    }
}
