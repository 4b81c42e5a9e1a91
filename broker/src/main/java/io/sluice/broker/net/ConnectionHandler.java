package io.sluice.broker.net;

import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.timeout.IdleState;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.broker.auth.Authenticator;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.ClientConnection;
import io.sluice.broker.queue.QueueManager;
import io.sluice.broker.queue.Subscription;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.CreditFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.DeleteQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.FrameDecoder;
import io.sluice.protocol.FrameEncoder;
import io.sluice.protocol.HeartbeatFrame;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.HelloOkFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.ProtocolException;
import io.sluice.protocol.ProtocolVersion;
import io.sluice.protocol.PublishCreditFrame;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishCursor;
import io.sluice.protocol.PurgeQueueFrame;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.UnsubscribeFrame;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One client connection: the handshake, then each frame handed to the queue it names. Runs on the
 * connection's event loop; queue work runs on the queue's executor (one task per frame).
 *
 * <p>Errors: a frame that breaks the protocol (malformed, unknown, before HELLO, oversized) gets an
 * ERROR with its code and a CLOSE, and the connection is closed; an operation that fails on its own
 * (unknown queue, unknown message id, bad setting) gets an ERROR and the connection stays usable.
 */
public final class ConnectionHandler extends ChannelInboundHandlerAdapter implements ClientConnection {
    private static final Logger LOG = LoggerFactory.getLogger(ConnectionHandler.class);

    private final BrokerConfig config;
    private final Authenticator authenticator;
    private final QueueManager queues;
    private ChannelHandlerContext ctx;
    private boolean open;
    private String clientName = "?";
    private String user = "";
    private ScheduledFuture<?> handshakeTimeout;
    private final Map<Integer, Subscription> subscriptions = new HashMap<>();
    /** Publish window handed out and not yet given back (messages, payload bytes); see {@link #returnPublishCredit}. */
    private final java.util.concurrent.atomic.AtomicLong windowMessagesOut = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong windowBytesOut = new java.util.concurrent.atomic.AtomicLong();
    private volatile boolean readingPaused;

    public ConnectionHandler(BrokerConfig config, Authenticator authenticator, QueueManager queues) {
        this.config = config;
        this.authenticator = authenticator;
        this.queues = queues;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        handshakeTimeout = ctx.executor().schedule(() -> {
            if (!open) {
                fail(ErrorCode.HANDSHAKE_REQUIRED, "no HELLO within " + config.broker.handshakeTimeoutMs + " ms");
            }
        }, config.broker.handshakeTimeoutMs, TimeUnit.MILLISECONDS);
        ctx.fireChannelActive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        boolean handedOff = false;
        try {
            Frame frame = (Frame) msg;
            if (!open) {
                if (frame instanceof HelloFrame hello) {
                    handshake(hello);
                } else {
                    fail(ErrorCode.HANDSHAKE_REQUIRED, "the first frame must be HELLO, got " + frame.type());
                }
                return;
            }
            handedOff = handle(frame);
        } finally {
            if (!handedOff) {
                ReferenceCountUtil.release(msg);
            }
        }
    }

    private void handshake(HelloFrame hello) {
        if (hello.maxVersion() < ProtocolVersion.CURRENT || hello.minVersion() > ProtocolVersion.CURRENT) {
            fail(ErrorCode.UNSUPPORTED_VERSION, "client speaks versions " + hello.minVersion() + ".." + hello.maxVersion()
                    + ", the broker speaks " + ProtocolVersion.CURRENT);
            return;
        }
        String rejected = authenticator.check(hello.user(), hello.password());
        if (rejected != null) {
            LOG.warn("Authentication failed for a connection from {}: {}.", ctx.channel().remoteAddress(), rejected);
            ctx.executor().schedule(() -> fail(ErrorCode.AUTHENTICATION_FAILED, "authentication failed: " + rejected),
                    200, TimeUnit.MILLISECONDS);
            return;
        }
        open = true;
        handshakeTimeout.cancel(false);
        clientName = hello.clientName();
        user = hello.user();
        // HELLO's maxFrameBytes 0 means "the broker's default" (see HelloFrame), not the 1024-byte floor.
        int wanted = hello.maxFrameBytes() == 0 ? config.broker.maxFrameBytes : Math.max(hello.maxFrameBytes(), 1024);
        int maxFrame = Math.min(config.broker.maxFrameBytes, wanted);
        ctx.pipeline().get(FrameDecoder.class).maxFrameBytes(config.broker.maxFrameBytes);
        ctx.pipeline().get(FrameEncoder.class).maxFrameBytes(maxFrame);
        ctx.writeAndFlush(new HelloOkFrame(ProtocolVersion.CURRENT, maxFrame, config.broker.heartbeatIntervalMs,
                config.broker.name, config.broker.publishWindowMessages, config.broker.publishWindowBytes));
        LOG.debug("Connection from {} opened by client '{}' (user '{}').", ctx.channel().remoteAddress(), clientName, user);
    }

    /** Returns true if the frame's buffer was handed to a queue, which releases it. */
    private boolean handle(Frame frame) {
        if (frame instanceof PublishFrame publish) {
            BrokerQueue queue = queues.get(publish.queue());
            if (queue == null) {
                rejectPublish(publish, ErrorCode.UNKNOWN_QUEUE, "queue '" + publish.queue() + "' does not exist; declare it first");
                return false;
            }
            takeWindow(publish);
            queue.publish(this, publish);
            return true;
        } else if (frame instanceof AckFrame ack) {
            Subscription sub = subscription(ack.consumerTag());
            if (sub != null) {
                sub.ack(ack);
            }
        } else if (frame instanceof CreditFrame credit) {
            Subscription sub = subscription(credit.consumerTag());
            if (sub != null) {
                sub.credit(credit.credit());
            }
        } else if (frame instanceof NackFrame nack) {
            Subscription sub = subscription(nack.consumerTag());
            if (sub != null) {
                sub.nack(nack);
            }
        } else if (frame instanceof SubscribeFrame subscribe) {
            subscribe(subscribe);
        } else if (frame instanceof UnsubscribeFrame unsubscribe) {
            Subscription sub = subscriptions.remove(unsubscribe.consumerTag());
            if (sub == null) {
                error(unsubscribe.requestId(), ErrorCode.UNKNOWN_CONSUMER, "no subscription with consumer tag " + unsubscribe.consumerTag());
            } else {
                sub.close();
                ctx.writeAndFlush(new OkFrame(unsubscribe.requestId()));
            }
        } else if (frame instanceof DeclareQueueFrame declare) {
            declare(declare);
        } else if (frame instanceof DeleteQueueFrame delete) {
            if (queues.delete(delete.queue())) {
                ctx.writeAndFlush(new OkFrame(delete.requestId()));
            } else {
                error(delete.requestId(), ErrorCode.UNKNOWN_QUEUE, "queue '" + delete.queue() + "' does not exist");
            }
        } else if (frame instanceof PurgeQueueFrame purge) {
            BrokerQueue queue = queues.get(purge.queue());
            if (queue == null) {
                error(purge.requestId(), ErrorCode.UNKNOWN_QUEUE, "queue '" + purge.queue() + "' does not exist");
            } else {
                long requestId = purge.requestId();
                queue.purge().addListener(f -> ctx.writeAndFlush(f.isSuccess()
                        ? new OkFrame(requestId, (Long) f.getNow())
                        : new ErrorFrame(requestId, ErrorCode.INTERNAL_ERROR, "purge of '" + purge.queue() + "' failed")));
            }
        } else if (frame instanceof HeartbeatFrame) {
            LOG.trace("Heartbeat from client '{}'.", clientName);
        } else if (frame instanceof CloseFrame close) {
            LOG.debug("Client '{}' closed the connection: {}", clientName, close.reason());
            ctx.writeAndFlush(new CloseFrame(ErrorCode.NONE, "bye")).addListener(ChannelFutureListener.CLOSE);
        } else if (frame instanceof HelloFrame) {
            fail(ErrorCode.UNEXPECTED_FRAME, "HELLO after the handshake");
        } else {
            fail(ErrorCode.UNEXPECTED_FRAME, "frame " + frame.type() + " is not sent by clients");
        }
        return false;
    }

    private void rejectPublish(PublishFrame publish, ErrorCode code, String message) {
        PublishCursor cursor = publish.cursor();
        int messages = 0;
        long bytes = 0;
        while (cursor.next()) {
            ctx.write(new PublishErrorFrame(cursor.producerId(), IdRange.single(cursor.sequence()), code, message));
            messages++;
            bytes += cursor.payloadLength();
        }
        ctx.write(new PublishCreditFrame(messages, bytes));
        ctx.flush();
    }

    /**
     * Producer credit (P1): the client may have at most the publish window of HELLO_OK outstanding
     * (sent, not yet given back by PUBLISH_CREDIT). A client that sends beyond it finds the broker no
     * longer reading its socket, so one connection cannot flood broker memory; reading resumes once
     * the broker has given enough window back.
     */
    private void takeWindow(PublishFrame publish) {
        PublishCursor cursor = publish.cursor();
        long bytes = 0;
        while (cursor.next()) {
            bytes += cursor.payloadLength();
        }
        long messages = windowMessagesOut.addAndGet(publish.messageCount());
        long outBytes = windowBytesOut.addAndGet(bytes);
        if ((messages > config.broker.publishWindowMessages || outBytes > config.broker.publishWindowBytes) && !readingPaused) {
            readingPaused = true;
            ctx.channel().config().setAutoRead(false);
            LOG.warn("Client '{}' from {} sent {} messages / {} bytes beyond its publish window; reading paused until it is back within.",
                    clientName, ctx.channel().remoteAddress(), messages, outBytes);
        }
    }

    @Override
    public void returnPublishCredit(int messages, long bytes) {
        long messagesOut = windowMessagesOut.addAndGet(-messages);
        long bytesOut = windowBytesOut.addAndGet(-bytes);
        ctx.write(new PublishCreditFrame(messages, bytes), ctx.voidPromise());
        if (readingPaused && messagesOut <= config.broker.publishWindowMessages && bytesOut <= config.broker.publishWindowBytes) {
            ctx.executor().execute(() -> {
                if (readingPaused) {
                    readingPaused = false;
                    ctx.channel().config().setAutoRead(true);
                    ctx.read();
                }
            });
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable()) {
            for (Subscription sub : subscriptions.values()) {
                sub.writable();
            }
        }
        ctx.fireChannelWritabilityChanged();
    }

    private void subscribe(SubscribeFrame subscribe) {
        if (subscriptions.containsKey(subscribe.consumerTag())) {
            error(subscribe.requestId(), ErrorCode.CONSUMER_TAG_IN_USE, "consumer tag " + subscribe.consumerTag() + " is already in use");
            return;
        }
        BrokerQueue queue = queues.get(subscribe.queue());
        if (queue == null) {
            error(subscribe.requestId(), ErrorCode.UNKNOWN_QUEUE, "queue '" + subscribe.queue() + "' does not exist");
            return;
        }
        Subscription sub = Subscription.open(queue, this, subscribe.consumerTag(), subscribe.initialCredit());
        subscriptions.put(subscribe.consumerTag(), sub);
        ctx.writeAndFlush(new OkFrame(subscribe.requestId()));
    }

    private void declare(DeclareQueueFrame declare) {
        try {
            if (declare.passive()) {
                BrokerQueue q = queues.get(declare.queue());
                if (q == null) {
                    error(declare.requestId(), ErrorCode.UNKNOWN_QUEUE, "queue '" + declare.queue() + "' does not exist");
                } else {
                    ctx.writeAndFlush(new OkFrame(declare.requestId(), q.store().unackedMessages()));
                }
                return;
            }
            BrokerQueue q = queues.declare(declare.queue(), declare.settings());
            ctx.writeAndFlush(new OkFrame(declare.requestId(), q.store().unackedMessages()));
        } catch (IllegalStateException e) {
            error(declare.requestId(), ErrorCode.QUEUE_EXISTS_WITH_DIFFERENT_SETTINGS, e.getMessage());
        } catch (IllegalArgumentException e) {
            ErrorCode code = e.getMessage().startsWith("queue name") ? ErrorCode.INVALID_QUEUE_NAME : ErrorCode.INVALID_QUEUE_SETTING;
            error(declare.requestId(), code, e.getMessage());
        }
    }

    private Subscription subscription(int tag) {
        Subscription sub = subscriptions.get(tag);
        if (sub == null) {
            error(0, ErrorCode.UNKNOWN_CONSUMER, "no subscription with consumer tag " + tag + " on this connection");
        }
        return sub;
    }

    private void error(long requestId, ErrorCode code, String message) {
        ctx.writeAndFlush(new ErrorFrame(requestId, code, message));
    }

    /** Reports a protocol violation and closes the connection. */
    private void fail(ErrorCode code, String message) {
        if (!ctx.channel().isActive()) {
            return;
        }
        LOG.info("Closing the connection from {} (client '{}'): {} {}.", ctx.channel().remoteAddress(), clientName, code, message);
        ctx.write(new ErrorFrame(0, code, message));
        ctx.writeAndFlush(new CloseFrame(code, message)).addListener(ChannelFutureListener.CLOSE);
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof IdleStateEvent idle) {
            if (idle.state() == IdleState.READER_IDLE) {
                fail(ErrorCode.HEARTBEAT_TIMEOUT, "no frame for two heartbeat intervals");
            } else if (idle.state() == IdleState.WRITER_IDLE && open) {
                ctx.writeAndFlush(HeartbeatFrame.INSTANCE);
            }
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        Throwable root = cause;
        while (root.getCause() != null && !(root instanceof ProtocolException)) {
            root = root.getCause();
        }
        if (root instanceof ProtocolException pe) {
            fail(pe.errorCode(), pe.getMessage());
        } else if (root instanceof java.io.IOException) {
            ctx.close();
        } else {
            LOG.error("Connection from {} failed.", ctx.channel().remoteAddress(), cause);
            fail(ErrorCode.INTERNAL_ERROR, "the broker failed on this connection; the broker log has the details");
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (handshakeTimeout != null) {
            handshakeTimeout.cancel(false);
        }
        for (Subscription sub : subscriptions.values()) {
            sub.close();
        }
        subscriptions.clear();
        ctx.fireChannelInactive();
    }

    /** The client name of HELLO ("?" before it); for the admin API. */
    public String clientName() {
        return clientName;
    }

    /** The user of HELLO ("" if anonymous); for the admin API. */
    public String user() {
        return user;
    }

    // ------------------------------------------------------------------ ClientConnection

    @Override
    public void write(Frame frame) {
        ctx.write(frame, ctx.voidPromise());
    }

    @Override
    public void flush() {
        ctx.flush();
    }

    @Override
    public String describe() {
        return ctx.channel().remoteAddress() + " (client '" + clientName + "')";
    }

    @Override
    public boolean isActive() {
        return ctx.channel().isActive();
    }

    @Override
    public boolean isWritable() {
        return ctx.channel().isWritable();
    }
}
