package io.sluice.client;

import io.sluice.protocol.Frame;
import io.sluice.protocol.ProducerInitFrame;
import io.sluice.protocol.ProducerOkFrame;

import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The first PRODUCER_INIT of each named producer of one {@link Connection}, which createProducer waits for: sent at
 * once when connected, else by the handshake that completes the reconnect under way, and again by the next handshake if
 * the connection is lost before its answer, as a consumer's first SUBSCRIBE is ({@link ConsumerSubscriptions}). Its
 * answer is taken on the network thread, in the task that reads it, so that a handshake handled after it finds the
 * producer registered and resumes its epoch on the new connection before it publishes there. Were the answer to reach
 * the producer through a dispatch thread, a handshake handled in that gap would skip the producer as never registered,
 * and it would then publish on the new connection without registering there, which the broker refuses with
 * PRODUCER_FENCED. The
 * resumes after later reconnects are the producer's own ({@link Producer#onReconnectedOnLoop()}).
 *
 * <p>Threads: the network thread owns everything here; {@link #register} runs on the application's thread and hands
 * its work over.
 */
final class NamedProducerRegistrations {
    private final Connection connection;
    /** The connection's producers by id, shared with {@link FrameDispatch}; added and removed here and by the connection. */
    private final Map<Long, Producer> producers;
    /** The createProducer calls waiting for their named producer's first PRODUCER_OK, through reconnects, until they give up. */
    private final FirstAnswerWaits<Producer, Void> awaitingFirstOk;

    NamedProducerRegistrations(Connection connection, Map<Long, Producer> producers) {
        this.connection = connection;
        this.producers = producers;
        this.awaitingFirstOk = new FirstAnswerWaits<>(connection);
    }

    /**
     * On the application's thread: adds {@code producer} to the connection (with the FLOW its queue last heard) and,
     * for a named one, returns once the broker answered its first PRODUCER_INIT, waiting up to the request timeout,
     * through a reconnect under way. Given up (a timeout), the producer is closed and leaves the connection. Refused on
     * a connection lost for good, as subscribe() is, rather than return a producer each of whose sends would fail.
     *
     * @throws IllegalStateException a producer of that name is already open on the connection
     */
    void register(Producer producer) {
        String queue = producer.queue();
        CompletableFuture<Void> registered = new CompletableFuture<>();
        String what = producer.name() == null ? "create producer for " + queue
                : "register producer '" + producer.name() + "' with queue " + queue;
        connection.runOnLoop(() -> {
            if (connection.refusesRegistrationOnLoop(registered, what)) {
                return;
            }
            if (producers.putIfAbsent(producer.producerId(), producer) != null) {
                registered.completeExceptionally(new NameInUseException("a producer named '" + producer.name()
                        + "' is already open on this connection"));
                return;
            }
            connection.startFromHeardFlowOnLoop(producer);
            if (producer.name() == null) {
                registered.complete(null);
                return;
            }
            awaitingFirstOk.add(producer, registered);
            if (connection.activeChannel() != null) {
                firstInitOnLoop(producer);
            } // else the handshake that completes the reconnect sends it (onHandshakeOnLoop)
        }, registered);
        try {
            Connection.await(registered, connection.options().requestTimeout(), what);
        } catch (SluiceException e) {
            registered.completeExceptionally(e);
            // Never returned, so never used: a late PRODUCER_OK must not leave it holding the name here. Behind the
            // task above, queued first by this thread.
            producer.close();
            connection.executeOnLoop(() -> {
                awaitingFirstOk.remove(producer);
                producers.remove(producer.producerId(), producer);
            });
            if (e.getCause() instanceof NameInUseException nameInUse) {
                throw nameInUse;
            }
            throw e;
        }
    }

    /** On loop, at each HELLO_OK, after the producers resumed: the first PRODUCER_INIT of those that wait for it. */
    void onHandshakeOnLoop() {
        for (Producer producer : awaitingFirstOk.keys()) {
            firstInitOnLoop(producer);
        }
    }

    /** On loop: the connection closed; the createProducer calls still waiting fail with {@code closed}. */
    void connectionClosedOnLoop(ConnectionLostException closed) {
        awaitingFirstOk.failAll(closed);
    }

    /**
     * On loop: the PRODUCER_INIT createProducer waits for, its answer taken here. Lost with the network connection, it
     * waits for the next handshake (unless the connection does not reconnect); refused or unanswered, createProducer
     * fails and the producer leaves the connection.
     */
    private void firstInitOnLoop(Producer producer) {
        // The answer is cast where take() fails the call with what taking it throws (another frame than PRODUCER_OK):
        // cast as the continuation is entered, it would throw where nobody looks.
        connection.requestSender()
                .<Frame>requestOnLoop(producer.initFrame(ProducerInitFrame.NEW_INSTANCE), producer.initDescription())
                // Given up by createProducer, which closed it, the answer is not taken.
                .whenComplete((answer, failure) -> awaitingFirstOk.take(producer, failure, () -> {
                    producer.initializedOnLoop((ProducerOkFrame) answer);
                    return null;
                }, cause -> producers.remove(producer.producerId(), producer)));
    }

    /**
     * The name is taken on this connection: its own type, so that an IllegalStateException from a defect in the work the
     * network thread ran for the registration is not reported to the application as a name clash.
     */
    private static final class NameInUseException extends IllegalStateException {
        NameInUseException(String message) {
            super(message);
        }
    }
}
