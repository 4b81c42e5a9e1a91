package io.sluice.client;

import io.sluice.protocol.Frame;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.UnsubscribeFrame;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

/**
 * The SUBSCRIBEs of one {@link Connection}'s consumers: the first, which {@link #subscribe} waits for, and the one after
 * each reconnect. A consumer is registered and its SUBSCRIBE sent in one task of the network thread, and each handshake
 * sends one SUBSCRIBE per consumer, so a SUBSCRIBE is sent once per network connection whatever the order of a
 * subscribe() and a HELLO_OK: subscribe() during a reconnect registers the consumer, and the handshake that completes
 * the reconnect sends its first SUBSCRIBE. Registered by one task and its SUBSCRIBE sent by a second, the consumer
 * would meet a HELLO_OK handled between the two as a consumer to resubscribe, then the second task would send SUBSCRIBE
 * again; handled after both, subscribe() would fail with "not connected; reconnecting".
 *
 * <p>Threads: the network thread owns everything here, and each SUBSCRIBE's answer is taken there (the request's
 * future completes on it); {@link #subscribe} runs on the application's thread and hands its work over.
 */
final class ConsumerSubscriptions {
    /** The connection's logger: applications filter the client's connection lines on it. */
    private static final Logger LOG = LoggerFactory.getLogger(Connection.class);

    private final Connection connection;
    /** The connection's consumers by tag, shared with {@link FrameDispatch}; added and removed here and by the connection. */
    private final Map<Integer, Consumer> consumers;
    /** The subscribe() calls waiting for their consumer's first OK, through reconnects, until they give up. */
    private final FirstAnswerWaits<Consumer, Consumer> awaitingFirstOk;
    /** The session whose network connection each consumer's last SUBSCRIBE went on. */
    private final Map<Consumer, Integer> subscribedOnSession = new HashMap<>();
    private int nextConsumerTag = 1;

    ConsumerSubscriptions(Connection connection, Map<Integer, Consumer> consumers) {
        this.connection = connection;
        this.consumers = consumers;
        this.awaitingFirstOk = new FirstAnswerWaits<>(connection);
    }

    /**
     * On the application's thread: registers a consumer and returns it once the broker answered its first SUBSCRIBE
     * OK, waiting up to the request timeout, through a reconnect under way. Given up (a timeout), the consumer is
     * forgotten, and unsubscribed if its SUBSCRIBE went on the current network connection (the broker may apply it
     * yet, with full credit, and nobody here would settle what it delivers).
     */
    Consumer subscribe(String queue, ConsumerOptions options, MessageHandler handler) {
        CompletableFuture<Consumer> registered = new CompletableFuture<>();
        CompletableFuture<Consumer> subscribed = new CompletableFuture<>();
        connection.runOnLoop(() -> {
            if (connection.refusesRegistrationOnLoop(subscribed, "SUBSCRIBE " + queue)) {
                return;
            }
            Consumer consumer = new Consumer(connection, queue, nextConsumerTag++, options, handler);
            consumers.put(consumer.consumerTag(), consumer);
            awaitingFirstOk.add(consumer, subscribed);
            registered.complete(consumer);
            if (connection.activeChannel() != null) {
                firstSubscribeOnLoop(consumer);
            } // else the handshake that completes the reconnect sends it (onHandshakeOnLoop)
        }, subscribed);
        try {
            return Connection.await(subscribed, connection.options().requestTimeout(), "SUBSCRIBE " + queue);
        } catch (RuntimeException e) {
            subscribed.completeExceptionally(e);
            // Behind the task above, queued first by this thread: it registered the consumer by then, if it did (a busy
            // network thread may take it only after the wait ended).
            connection.executeOnLoop(() -> {
                Consumer consumer = registered.getNow(null);
                if (consumer != null) {
                    abandonOnLoop(consumer);
                }
            });
            throw e;
        }
    }

    /** On loop, at each HELLO_OK: one SUBSCRIBE per consumer on the new network connection. */
    void onHandshakeOnLoop(int session) {
        for (Consumer consumer : List.copyOf(consumers.values())) {
            if (consumer.isClosed() || awaitingFirstOk.givenUp(consumer)) {
                // Closing (its close() removes it), or given up by subscribe() (its work behind forgets it): a new
                // subscription would deliver to nobody.
                continue;
            }
            consumer.onReconnectedOnLoop();
            if (awaitingFirstOk.contains(consumer)) {
                firstSubscribeOnLoop(consumer);
            } else {
                resubscribeOnLoop(consumer, session, Connection.RETRY_FIRST_DELAY_NANOS);
            }
        }
    }

    /** On loop: the connection closed; the subscribe() calls still waiting fail with {@code closed}. */
    void connectionClosedOnLoop(ConnectionLostException closed) {
        awaitingFirstOk.failAll(closed);
        subscribedOnSession.clear();
    }

    /** On loop: the consumer closed by the application left the connection. */
    void removedOnLoop(Consumer consumer) {
        subscribedOnSession.remove(consumer);
    }

    /**
     * On loop: the SUBSCRIBE subscribe() waits for. Lost with the network connection, it waits for the next handshake
     * (unless the connection does not reconnect); refused or unanswered, subscribe() fails and the consumer is
     * forgotten, an unanswered one unsubscribed first.
     */
    private void firstSubscribeOnLoop(Consumer consumer) {
        int forSession = connection.session();
        // Given up by subscribe(), the answer is not taken: subscribe() unsubscribed it if need be.
        subscribeOnLoop(consumer).whenComplete((ok, failure) -> awaitingFirstOk.take(consumer, failure, () -> consumer,
                cause -> {
                    forget(consumer);
                    if (cause instanceof SluiceTimeoutException && connection.session() == forSession) {
                        unsubscribeOnLoop(consumer);
                    }
                }));
    }

    /**
     * On loop, after subscribe() gave up: forgets the consumer, and unsubscribes it if its SUBSCRIBE went on the
     * current network connection, answered or not (a refused one was forgotten already).
     */
    private void abandonOnLoop(Consumer consumer) {
        awaitingFirstOk.remove(consumer);
        Integer session = subscribedOnSession.get(consumer);
        if (!forget(consumer)) {
            return;
        }
        if (session != null && session == connection.session() && connection.activeChannel() != null) {
            unsubscribeOnLoop(consumer);
        }
    }

    /** On loop: removes the consumer from the connection; false if it was no longer there. */
    private boolean forget(Consumer consumer) {
        subscribedOnSession.remove(consumer);
        return consumers.remove(consumer.consumerTag(), consumer);
    }

    private void unsubscribeOnLoop(Consumer consumer) {
        connection.requestSender()
                .request(id -> new UnsubscribeFrame(id, consumer.consumerTag()), "UNSUBSCRIBE " + consumer.queue())
                .whenComplete((ok, failure) -> LOG.debug("UNSUBSCRIBE of the given-up subscription {} to {}: {}",
                        consumer.consumerTag(), consumer.queue(), failure == null ? "done" : failure.getMessage()));
    }

    /**
     * On loop, after a reconnect: SUBSCRIBE {@code consumer} again on session {@code forSession}. A refusal that may
     * pass (a timeout, a retriable code such as RESOURCE_LIMIT) is tried again after {@code delayNanos}, doubling up to
     * {@link Connection#RETRY_MAX_DELAY_NANOS}; a timed-out SUBSCRIBE is ended by an UNSUBSCRIBE first (the broker may
     * apply it yet, as in {@link #subscribe}). Any other refusal (the queue is gone, the user may no longer consume)
     * ends the consumer: {@link Consumer#failure()} says why and {@code receive} throws it, rather than wait for
     * messages that can never come.
     */
    private void resubscribeOnLoop(Consumer consumer, int forSession, long delayNanos) {
        subscribeOnLoop(consumer).whenComplete((ok, failure) -> {
            Throwable cause = unwrap(failure);
            if (cause == null || connection.session() != forSession || connection.isClosed() || consumer.isClosed()) {
                return; // subscribed, or a later session subscribes it again, or nobody wants it any more
            }
            boolean timedOut = cause instanceof SluiceTimeoutException;
            if (timedOut || cause instanceof SluiceException refused && refused.retriable()) {
                LOG.warn("Resubscribing to {} after reconnecting failed ({}); trying again in {} ms.", consumer.queue(),
                        cause.getMessage(), TimeUnit.NANOSECONDS.toMillis(delayNanos));
                if (timedOut) {
                    unsubscribeOnLoop(consumer);
                }
                // A retry that throws ends the consumer: it would otherwise wait, never subscribed, for good.
                connection.scheduleOnLoop(connection.owing("the retry of SUBSCRIBE " + consumer.queue() + " after reconnecting",
                        "the consumer ends with the exception", thrown -> endOnLoop(consumer, thrown), () -> {
                            if (connection.session() == forSession && !connection.isClosed() && !consumer.isClosed()) {
                                resubscribeOnLoop(consumer, forSession, Math.min(2 * delayNanos, Connection.RETRY_MAX_DELAY_NANOS));
                            }
                        }), delayNanos);
                return;
            }
            LOG.error("{}", endOnLoop(consumer, cause).getMessage());
        });
    }

    /** On loop: {@code consumer} ends, as subscribing it again after reconnecting failed with {@code cause}; returns why. */
    private SluiceException endOnLoop(Consumer consumer, Throwable cause) {
        forget(consumer);
        SluiceException ended = cause instanceof SluiceException refused
                ? new SluiceException(refused.errorCode(), refused.brokerMessage(), "the consumer of queue "
                        + consumer.queue() + " ended: subscribing again after reconnecting was refused: " + refused.getMessage())
                : new SluiceException("the consumer of queue " + consumer.queue()
                        + " ended: subscribing again after reconnecting failed: " + cause, cause);
        consumer.failedOnLoop(ended);
        return ended;
    }

    /**
     * On loop: writes a SUBSCRIBE for {@code consumer} now; the future completes on the loop with the answer, any frame
     * the broker answered the request with: typed OK, a continuation would cast it as it was entered, and what that
     * threw (another frame than OK) would stay where nobody looks, subscribe() waiting out its timeout.
     */
    private CompletableFuture<Frame> subscribeOnLoop(Consumer consumer) {
        if (connection.activeChannel() != null) {
            subscribedOnSession.put(consumer, connection.session());
        }
        return connection.requestSender().requestOnLoop(id -> new SubscribeFrame(id, consumer.consumerTag(),
                consumer.queue(), consumer.options().credit()), "SUBSCRIBE " + consumer.queue());
    }

    private static Throwable unwrap(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }
}
