package io.sluice.client;

import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.ProducerInitFrame;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A named producer's first registration (PRODUCER_INIT of a new instance) while the connection is lost and made again,
 * against the fake broker.
 */
class NamedProducerRegistrationTest {
    /**
     * createProducer for a named producer called while the connection reconnects waits for the handshake, which sends
     * its PRODUCER_INIT, as subscribe() does, and returns the producer registered on the new connection, rather than
     * fail at once with "not connected; reconnecting".
     */
    @Test
    void aNamedProducerCreatedDuringAReconnectRegistersOnceTheHandshakeCompletes() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            broker.dropConnectionsAndHoldTheReconnect();
            Creation creation = createInThread(connection, "billing");
            TestWait.until(() -> creation.result().isDone() || creation.thread().getState() == Thread.State.TIMED_WAITING);
            passNetworkThread(connection); // it took the createProducer's work while disconnected
            broker.answerHeldHellos();
            Throwable failure = null;
            Producer producer = null;
            try {
                producer = creation.result().get(10, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                failure = e.getCause();
            }
            assertEquals(null, failure == null ? null : failure.toString(), "createProducer succeeds once the handshake completes");
            producer.send("a".getBytes(StandardCharsets.UTF_8));
            assertEquals(List.of("HELLO", "HELLO", "PRODUCER_INIT billing -1"), handshakesAndRegistrations(broker));
            assertEquals(1, producer.epoch());
            assertEquals(List.of(1L), List.copyOf(broker.publishedSequences));
        }
    }

    /**
     * createProducer for a named producer called while a reconnect waits for a HELLO_OK that comes only after the request
     * timeout throws SluiceTimeoutException, as subscribe() does, and the handshake that completes later registers
     * nothing (the name would be taken for a producer nobody holds); it does not throw ConnectionLostException at once.
     */
    @Test
    void aNamedProducerWaitingForAReconnectLongerThanTheRequestTimeoutIsNeverRegistered() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting(Duration.ofMillis(300))) {
            broker.dropConnectionsAndHoldTheReconnect();
            assertThrows(SluiceTimeoutException.class,
                    () -> connection.createProducer("orders", ProducerOptions.DEFAULT.withName("billing")));
            broker.answerHeldHellos();
            TestWait.until(connection::isConnected);
            passNetworkThread(connection); // after the handshake's work
            assertEquals(List.of("HELLO", "HELLO"), handshakesAndRegistrations(broker), "the abandoned producer is not registered");
            // Its name is free again on this connection.
            assertEquals(1, connection.createProducer("orders", ProducerOptions.DEFAULT.withName("billing")).epoch());
        }
    }

    /**
     * createProducer that gave up while the reconnect's HELLO_OK was on its way, the network thread handling that HELLO_OK
     * before the work createProducer queued as it gave up: the handshake registers nothing for it. It fails if the
     * handshake sends its PRODUCER_INIT (a new epoch under the name, fencing whichever instance held it) before the
     * producer is forgotten.
     */
    @Test
    void aNamedProducerGivenUpJustBeforeTheHandshakeIsNeverRegistered() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting(Duration.ofMillis(1500))) {
            broker.dropConnectionsAndHoldTheReconnect();
            Creation creation = createInThread(connection, "billing");
            TestWait.until(() -> creation.thread().getState() == Thread.State.TIMED_WAITING);
            passNetworkThread(connection); // it registered the producer, waiting for the handshake
            HeldNetworkThread.giveUpAheadOfTheHandshake(connection, broker, creation.result());
            TestWait.until(connection::isConnected);
            passNetworkThread(connection); // after the handshake's work and createProducer's
            assertEquals(List.of("HELLO", "HELLO"), handshakesAndRegistrations(broker), "the abandoned producer is not registered");
        }
    }

    /**
     * The PRODUCER_OK of a named producer's first registration arrives, then the connection is lost and made again
     * before a dispatch thread (held by the test) hands that answer on: the producer still resumes its epoch on the new
     * connection before it publishes there. It fails if the answer reaches the producer only through the dispatch
     * thread, after the handshake skipped it as never registered: it would then publish on the new connection without a
     * PRODUCER_INIT there, which a broker refuses with PRODUCER_FENCED ("this connection never registered it").
     */
    @Test
    void aFirstRegistrationAnsweredJustBeforeAReconnectIsResumedOnTheNewConnection() throws Exception {
        HeldCallbacks callbacks = new HeldCallbacks();
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting(callbacks::around)) {
            callbacks.hold();
            Creation creation = createInThread(connection, "billing");
            TestWait.until(() -> callbacks.heldCount() == 1); // the PRODUCER_OK was read; what it completes waits
            broker.dropConnections();
            TestWait.until(() -> broker.count(HelloFrame.class) == 2);
            TestWait.until(connection::isConnected);
            passNetworkThread(connection); // after the handshake's work
            callbacks.release();
            Producer producer = creation.result().get(10, TimeUnit.SECONDS);
            producer.send("a".getBytes(StandardCharsets.UTF_8));
            assertEquals(List.of("HELLO", "PRODUCER_INIT billing -1", "HELLO", "PRODUCER_INIT billing 1"),
                    handshakesAndRegistrations(broker), "registered on the new connection before publishing there");
            assertEquals(List.of(1L), List.copyOf(broker.publishedSequences));
        }
    }

    /** A createProducer called on a thread of the test, and what it returns or throws. */
    private record Creation(Thread thread, CompletableFuture<Producer> result) {
    }

    private static Creation createInThread(Connection connection, String name) {
        CompletableFuture<Producer> created = new CompletableFuture<>();
        Thread creator = new Thread(() -> {
            try {
                created.complete(connection.createProducer("orders", ProducerOptions.DEFAULT.withName(name)));
            } catch (Throwable t) {
                created.completeExceptionally(t);
            }
        }, "test-create-producer");
        creator.start();
        return new Creation(creator, created);
    }

    /** Returns once the network thread ran every task queued before this call. */
    private static void passNetworkThread(Connection connection) throws Exception {
        CompletableFuture<Void> passed = new CompletableFuture<>();
        connection.executeOnLoop(() -> passed.complete(null));
        passed.get(10, TimeUnit.SECONDS);
    }

    /** Each HELLO, and each PRODUCER_INIT as "PRODUCER_INIT name epoch", in the order the broker read them. */
    private static List<String> handshakesAndRegistrations(FakeBroker broker) {
        List<String> seen = new ArrayList<>();
        for (Object frame : broker.received) {
            if (frame instanceof HelloFrame) {
                seen.add("HELLO");
            } else if (frame instanceof ProducerInitFrame init) {
                seen.add("PRODUCER_INIT " + init.producerName() + " " + init.epoch());
            }
        }
        return seen;
    }
}
