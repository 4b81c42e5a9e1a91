package io.sluice.client;

import io.netty.channel.Channel;
import io.sluice.client.internal.LogThrottle;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.DeliverFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.FlowFrame;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.Frame;
import io.sluice.protocol.HeartbeatFrame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.ProducerOkFrame;
import io.sluice.protocol.PublishCreditFrame;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.TxAbortedFrame;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executor;

/**
 * Hands each frame a {@link Connection}'s broker sends after the handshake to what waits for it: OK, PRODUCER_OK and
 * ERROR to their {@link PendingRequests} (an answer of the wrong type closes the connection), an ERROR to no request to
 * the log and the application's {@link ErrorListener}, CONFIRM and
 * PUBLISH_ERROR to their {@link Producer}, DELIVER to its
 * {@link Consumer}, FLOW to the queue's producers, PUBLISH_CREDIT to the {@link ClientPublishWindow} (then every
 * producer and transaction may send), TX_ABORTED to the {@link OpenTransactions}. A CLOSE closes the channel, after
 * a NOT_LEADER towards the leader it names ({@link ConnectionAttempts#closedNotLeader}); a frame only a client sends
 * closes it too.
 *
 * <p>Threads: the connection's network thread, which owns everything here. The producer and consumer maps are the
 * connection's, which adds and removes their entries; this class only looks them up.
 */
final class FrameDispatch {
    /** The connection's logger: applications filter the client's connection lines on it. */
    private static final Logger LOG = LoggerFactory.getLogger(Connection.class);

    private final PendingRequests requests;
    private final Map<Long, Producer> producers;
    private final Map<Integer, Consumer> consumers;
    private final OpenTransactions transactions;
    private final ClientPublishWindow publishWindow;
    private final ConnectionAttempts attempts;
    /**
     * The last SLOW or BLOCKED heard for each queue on this connection's session (FREE removes it). The broker tells
     * a connection of a queue's state once, when it first publishes there, so a producer created later on the same
     * connection starts from this rather than FREE ({@link #heardFlow}).
     */
    private final Map<String, FlowFrame> heardFlows = new HashMap<>();
    /** The CLOSE the broker sent on the current network connection, or null: what its loss is put down to. */
    private CloseFrame closedByBroker;
    /** How the broker broke the protocol, for which the client closed the current network connection, or null. */
    private String closedByClient;
    /**
     * ERRORs to no request: one WARN line a minute at most per error code ({@link #warnUnanswered}), so a flood of one
     * kind does not hide another.
     */
    private final Map<ErrorCode, LogThrottle> unansweredErrors = new EnumMap<>(ErrorCode.class);
    /** Told of each ERROR to no request, through {@link #errorCallbacks}; null if the application set none. */
    private final ErrorListener errorListener;
    /** Where {@link #errorListener} runs: where callbacks run, one call at a time, in the order the errors came. */
    private final Executor errorCallbacks;

    FrameDispatch(PendingRequests requests, Map<Long, Producer> producers, Map<Integer, Consumer> consumers,
                  OpenTransactions transactions, ClientPublishWindow publishWindow, ConnectionAttempts attempts,
                  ErrorListener errorListener, Executor errorCallbacks) {
        this.errorListener = errorListener;
        this.errorCallbacks = errorCallbacks;
        this.requests = requests;
        this.producers = producers;
        this.consumers = consumers;
        this.transactions = transactions;
        this.publishWindow = publishWindow;
        this.attempts = attempts;
    }

    /**
     * An ERROR to no request. The broker sends one for each TX_PUBLISH it refuses before storing it (docs/protocol.md,
     * "Transactions"), so a client that keeps publishing into a transaction the broker rolled back would write a WARN
     * line per frame: the first of each code is logged, then at most one a minute, saying how many were not; each is at
     * DEBUG.
     */
    private void warnUnanswered(ErrorFrame error) {
        long notLogged = unansweredErrors.computeIfAbsent(error.errorCode(),
                code -> new LogThrottle(Duration.ofMinutes(1), System::nanoTime)).admit();
        if (notLogged < 0) {
            LOG.debug("The broker at {} reported an error: {} {}", attempts.address(), error.errorCode(), error.message());
            return;
        }
        LOG.warn("The broker at {} reported an error: {} {}{}", attempts.address(), error.errorCode(), error.message(),
                notLogged == 0 ? "" : " (and " + notLogged + " more such errors since the last of these lines, at DEBUG)");
    }

    /** The last SLOW or BLOCKED this session heard for {@code queue}, or null if none (or FREE since). */
    FlowFrame heardFlow(String queue) {
        return heardFlows.get(queue);
    }

    /** A new session: the broker tells its states again, when this connection's producers first publish there. */
    void newSession() {
        heardFlows.clear();
        closedByBroker = null;
        closedByClient = null;
    }

    /**
     * Why the broker closed the network connection, as words to add to its loss, or "" if it sent no CLOSE: a call
     * that fails with the loss (a TX_COMMIT in flight at the broker's shutdown, say) says so.
     */
    String closeReason() {
        if (closedByClient != null) {
            return " (the client closed it: " + closedByClient + ")";
        }
        return closedByBroker == null ? "" : " (the broker closed it: " + closedByBroker.reason() + ", "
                + closedByBroker.errorCode() + ")";
    }

    /**
     * The answer to request {@code requestId}. One of a type the request does not accept failed the request; the broker
     * broke the protocol, so the network connection is closed, as for a frame of an unknown type (the decoder's
     * ProtocolException), and its loss says why ({@link #closeReason}).
     */
    private void answered(Channel ch, long requestId, Frame answer) {
        UnexpectedAnswerException unexpected = requests.answered(requestId, answer);
        if (unexpected != null) {
            brokeTheProtocol(ch, unexpected.getMessage());
        }
    }

    /** The broker broke the protocol ({@code how}): the network connection is closed, its loss saying why. */
    private void brokeTheProtocol(Channel ch, String how) {
        LOG.warn("The broker at {} broke the protocol, so the connection is closed: {}", attempts.address(), how);
        closedByClient = how;
        ch.close();
    }

    /** A frame that came on {@code ch}, the connection's current channel. */
    void onFrame(Channel ch, Frame frame) {
        if (frame instanceof OkFrame ok) {
            answered(ch, ok.requestId(), ok);
        } else if (frame instanceof ProducerOkFrame ok) {
            answered(ch, ok.requestId(), ok);
        } else if (frame instanceof ErrorFrame error) {
            if (!requests.refused(error)) {
                warnUnanswered(error);
                if (errorListener != null) {
                    errorCallbacks.execute(() -> errorListener.onError(error.errorCode(), error.message()));
                }
            }
        } else if (frame instanceof ConfirmFrame confirm) {
            Producer producer = producers.get(confirm.producerId());
            if (producer != null) {
                producer.onConfirmOnLoop(confirm.sequences());
            }
        } else if (frame instanceof PublishErrorFrame error) {
            Producer producer = producers.get(error.producerId());
            if (producer != null) {
                producer.onPublishErrorOnLoop(error);
            }
        } else if (frame instanceof DeliverFrame deliver) {
            Consumer consumer = consumers.get(deliver.consumerTag());
            if (consumer != null) {
                consumer.onDeliverOnLoop(deliver);
            } else {
                LOG.debug("Dropped a delivery for unknown consumer tag {}.", deliver.consumerTag());
            }
        } else if (frame instanceof FlowFrame flow) {
            if (flow.state() == FlowState.FREE) {
                heardFlows.remove(flow.queue());
            } else {
                heardFlows.put(flow.queue(), flow);
            }
            Producer.eachOnLoop(producers.values(), "taking a FLOW", producer -> {
                if (producer.queue().equals(flow.queue())) {
                    producer.onFlowOnLoop(flow);
                }
            });
        } else if (frame instanceof PublishCreditFrame credit) {
            publishWindow.credited(credit.messages(), credit.bytes());
            Producer.eachOnLoop(producers.values(), "sending after a PUBLISH_CREDIT", Producer::flushOnLoop);
            transactions.windowWidenedOnLoop();
        } else if (frame instanceof TxAbortedFrame aborted) {
            transactions.abortedOnLoop(aborted);
        } else if (frame instanceof CloseFrame close) {
            LOG.warn("The broker at {} closed the connection: {} {}", attempts.address(), close.errorCode(), close.reason());
            closedByBroker = close;
            if (close.errorCode() == ErrorCode.NOT_LEADER) {
                attempts.closedNotLeader(close.reason()); // the reconnect goes where it says
            }
            ch.close();
        } else if (!(frame instanceof HeartbeatFrame)) {
            // Every frame a broker sends is handled above: this one only a client sends (FrameType.direction()), which
            // breaks the protocol as a frame of an unknown type does (the decoder refuses that, and the connection
            // closes).
            brokeTheProtocol(ch, "it sent a " + frame.type() + " frame, which only a client sends");
        }
    }
}
