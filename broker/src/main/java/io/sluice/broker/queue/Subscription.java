package io.sluice.broker.queue;

import io.sluice.broker.error.ErrorCodes;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackFrame;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A connection's handle on one of its consumers. Created on the connection's event loop; every
 * call hands its work to the queue's executor, where the {@link ConsumerSession} lives. Tasks run in
 * submission order, so the session exists before any later frame of the same consumer is handled.
 * If the queue could not open the consumer (its store failed), the connection gets an ERROR naming the
 * tag and the cause, and the consumer's later frames change nothing.
 */
public final class Subscription {
    private static final Logger LOG = LoggerFactory.getLogger(Subscription.class);
    private final BrokerQueue queue;
    private ConsumerSession session;

    private Subscription(BrokerQueue queue) {
        this.queue = queue;
    }

    /**
     * Opens a consumer with {@code initialCredit}, silently capped by {@code account}: the queue
     * grants what fits when it runs the subscription, in order with the consumer's later frames.
     */
    public static Subscription open(BrokerQueue queue, ConsumerLink connection, int tag, long initialCredit,
                                    ConnectionCredit account) {
        Subscription sub = new Subscription(queue);
        queue.executor().execute(() -> {
            try {
                sub.session = queue.subscribe(connection, tag, initialCredit, account);
            } catch (RuntimeException e) {
                ErrorCode code = ErrorCodes.of(e);
                if (code == ErrorCode.INTERNAL_ERROR) {
                    LOG.warn("Queue '{}': consumer tag {} could not be opened.", queue.name(), tag, e);
                }
                // The SUBSCRIBE was answered OK, so the tag stays the connection's until it is unsubscribed.
                connection.error(code, "consumer tag " + tag + " on queue '" + queue.name() + "' could not be opened ("
                        + e.getMessage() + "); unsubscribe the tag, then subscribe again");
                connection.flush();
            }
        });
        return sub;
    }

    /** More credit: what fits under the connection's bound is granted; past it, the consumer gets an ERROR RESOURCE_LIMIT. */
    public void credit(long credit) {
        queue.executor().execute(() -> {
            if (session != null) {
                queue.credit(session, credit);
            }
        });
    }

    public void ack(AckFrame frame) {
        queue.executor().execute(() -> {
            if (session != null) {
                queue.ack(session, frame);
            }
        });
    }

    /** TX_ACK: the queue takes these deliveries off the consumer, in order with its other frames, and holds them for a transaction. */
    public CompletableFuture<HeldAcks> hold(List<IdRange> ranges) {
        return queue.transactions().hold(() -> session, ranges); // the session is the executor's: read there
    }

    public void nack(NackFrame frame) {
        queue.executor().execute(() -> {
            if (session != null) {
                queue.nack(session, frame);
            }
        });
    }

    /** The connection can take more writes again: let the queue deliver. */
    public void writable() {
        queue.executor().execute(queue::wake);
    }

    /**
     * Ends the consumer, its outstanding messages back to the queue; completes on the queue's executor once it is ended, so an answer sent from there (or handed
     * to the connection's loop from there) follows every delivery the queue wrote for it.
     */
    public CompletableFuture<Void> close() {
        CompletableFuture<Void> ended = new CompletableFuture<>();
        try {
            queue.executor().execute(() -> {
                try {
                    if (session != null) {
                        queue.unsubscribe(session);
                    }
                } finally {
                    ended.complete(null);
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            ended.complete(null); // the queue's executor is gone: nothing more is delivered
        }
        return ended;
    }
}
