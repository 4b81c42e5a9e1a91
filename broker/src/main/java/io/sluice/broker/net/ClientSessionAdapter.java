package io.sluice.broker.net;

import io.sluice.broker.log.Printable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.util.ReferenceCountUtil;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.queue.QueueManager;
import io.sluice.broker.security.ConnectionLimits;
import io.sluice.broker.txn.TransactionCoordinator;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.CreditFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.DeleteQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.Frame;
import io.sluice.protocol.HeartbeatFrame;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.ProducerInitFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PurgeQueueFrame;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.TxAckFrame;
import io.sluice.protocol.TxBeginFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxPublishFrame;
import io.sluice.protocol.TxRollbackFrame;
import io.sluice.protocol.UnsubscribeFrame;

/**
 * The pipeline stage of an open connection, after the {@link HandshakeHandler} (Aeron's adapter:
 * frames become calls). Each frame read becomes one call on the connection's {@link ClientSession},
 * unless the {@link InboundGate} holds it behind a request in progress; what goes back to the client
 * leaves through the {@link ClientSessionProxy}. The frames of the connection itself (HEARTBEAT,
 * CLOSE, a HELLO after the handshake, frames only a broker sends) are answered here. Runs on the
 * connection's event loop; it builds the session, its proxy, window and gate there when added.
 *
 * <p>Errors: a frame that breaks the protocol (malformed, unknown, oversized, sent in the wrong
 * direction) gets an ERROR with its code and a CLOSE, and the connection is closed
 * ({@link ProtocolHandler}).
 */
public final class ClientSessionAdapter extends ProtocolHandler {
    private final BrokerConfig config;
    private final QueueManager queues;
    private final TransactionCoordinator transactions;
    private final String clientName;
    private final String user;
    private final int negotiatedMaxFrameBytes;
    /** HELLO_OK's capabilities: whether the publish window counts headers (docs/protocol.md, "Capabilities"). */
    private final int grantedCapabilities;
    /** W2: what the connection's unsettled publishes hold; read by the admin API and the metrics from their threads. */
    private final HeldPublishBytes held;
    private ChannelHandlerContext ctx;
    private InboundGate gate;
    private ClientSession session;

    /**
     * An open connection, put in the pipeline by the {@link HandshakeHandler} once HELLO_OK is sent;
     * it owns the connection's counts in {@code limits.max-connections} and
     * {@code limits.max-connections-per-user} from then on.
     */
    ClientSessionAdapter(BrokerConfig config, QueueManager queues, TransactionCoordinator transactions, ConnectionSecurity security,
                         String clientName, String user, int negotiatedMaxFrameBytes, int grantedCapabilities) {
        super(security);
        this.transactions = transactions;
        this.config = config;
        this.queues = queues;
        this.clientName = clientName;
        this.user = user;
        this.negotiatedMaxFrameBytes = negotiatedMaxFrameBytes;
        this.grantedCapabilities = grantedCapabilities;
        this.held = new HeldPublishBytes(config.broker.publishWindowBytes);
    }

    /** Before any frame is read and before any queue can know this connection. */
    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        PublishWindow window = new PublishWindow(config.broker.publishWindowMessages, config.broker.publishWindowBytes,
                (grantedCapabilities & HelloFrame.CAPABILITY_WINDOW_COUNTS_HEADERS) != 0);
        gate = new InboundGate(ctx, this::read, this::failed);
        ClientSessionProxy proxy = new ClientSessionProxy(ctx, clientName, negotiatedMaxFrameBytes, window, held, gate);
        session = new ClientSession(queues, transactions == null ? null : transactions.forConnection(proxy), security, user, proxy,
                window, held, gate, this::failed);
        proxy.wakeQueues(session::writable);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        read(msg);
    }

    /**
     * The broker does not read the client, and the client is not at fault: paused for its window or the bytes its
     * publishes hold (H2) while it reads what the broker writes, so that a client whose confirms wait on a slowed queue
     * is not closed for the silence the pause makes; or paused because it has not read enough of what the broker wrote
     * (H4) while it does read it, which the kernel says ({@link ClientReading}): its frames, heartbeats included, wait
     * unread in its socket, and a client reading a large backlog slowly (a slow link, a loaded machine) was closed with
     * HEARTBEAT_TIMEOUT, "no frame for two heartbeat intervals", though it sent them. A client that reads nothing for the
     * two intervals (ClientThatNeverReadsIsClosedTest), or is gone, is closed for silence as before.
     */
    @Override
    boolean silenceIsTheBrokers() {
        if (gate == null) {
            return false;
        }
        if (gate.pausedForOutbound()) {
            return ClientReading.within(ctx.channel(), 2L * config.broker.heartbeatIntervalMs);
        }
        return gate.pausedForWindow();
    }

    /** One frame, read now or let go by the gate; released unless its buffer went to a queue. */
    private void read(Object msg) {
        if (gate.hold(msg)) {
            return; // after the requests in progress, in order (H1)
        }
        boolean handedOff = false;
        try {
            handedOff = handle((Frame) msg);
        } finally {
            if (!handedOff) {
                ReferenceCountUtil.release(msg);
            }
        }
    }

    /** Returns true if the frame's buffer was handed to a queue, which releases it. */
    private boolean handle(Frame frame) {
        if (frame instanceof PublishFrame publish) {
            return session.publish(publish);
        } else if (frame instanceof TxPublishFrame publish) {
            return session.txPublish(publish);
        } else if (frame instanceof TxAckFrame ack) {
            session.txAck(ack);
        } else if (frame instanceof TxBeginFrame begin) {
            session.txBegin(begin);
        } else if (frame instanceof TxCommitFrame commit) {
            session.txCommit(commit);
        } else if (frame instanceof TxRollbackFrame rollback) {
            session.txRollback(rollback);
        } else if (frame instanceof AckFrame ack) {
            session.ack(ack);
        } else if (frame instanceof CreditFrame credit) {
            session.credit(credit);
        } else if (frame instanceof NackFrame nack) {
            session.nack(nack);
        } else if (frame instanceof SubscribeFrame subscribe) {
            session.subscribe(subscribe);
        } else if (frame instanceof UnsubscribeFrame unsubscribe) {
            session.unsubscribe(unsubscribe);
        } else if (frame instanceof DeclareQueueFrame declare) {
            session.declare(declare);
        } else if (frame instanceof ProducerInitFrame init) {
            session.initProducer(init);
        } else if (frame instanceof DeleteQueueFrame delete) {
            session.delete(delete);
        } else if (frame instanceof PurgeQueueFrame purge) {
            session.purge(purge);
        } else if (frame instanceof HeartbeatFrame) {
            LOG.trace("Heartbeat from client '{}'.", clientName);
        } else if (frame instanceof CloseFrame close) {
            LOG.debug("Client '{}' closed the connection: {}", Printable.escape(clientName), Printable.escape(close.reason()));
            LastFrame.writeAndClose(ctx, new CloseFrame(ErrorCode.NONE, "bye"));
        } else if (frame instanceof HelloFrame) {
            fail(ctx, ErrorCode.UNEXPECTED_FRAME, "HELLO after the handshake");
        } else {
            fail(ctx, ErrorCode.UNEXPECTED_FRAME, "frame " + frame.type() + " is not sent by clients");
        }
        return false;
    }

    private void failed(Throwable cause) {
        exceptionCaught(ctx, cause);
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        boolean writable = ctx.channel().isWritable();
        gate.writabilityChanged(writable); // H4: a client that does not read is not read either
        if (writable) {
            session.writable();
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    void writerIdle(ChannelHandlerContext ctx) {
        ctx.writeAndFlush(HeartbeatFrame.INSTANCE);
    }

    @Override
    String clientName() {
        return clientName;
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt == StopReading.INSTANCE) {
            gate.stopReading();
            return;
        }
        super.userEventTriggered(ctx, evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        limits().closeConnection();
        limits().closeUserConnection(user);
        session.close();
        gate.close();
        ctx.fireChannelInactive();
    }

    private ConnectionLimits limits() {
        return security.limits();
    }

    /** The client name of HELLO; for the admin API. */
    public String client() {
        return clientName;
    }

    /** The user of HELLO ("" if anonymous); for the admin API (a connection not yet past HELLO has no adapter). */
    public String user() {
        return user;
    }

    /**
     * The headers and payload of the messages this connection published that the broker has not confirmed or refused
     * yet (rule W2 of docs/flow-control.md); for the admin API and the metrics, from any thread, a moment stale.
     */
    public long publishHeldBytes() {
        return held.bytes();
    }
}
