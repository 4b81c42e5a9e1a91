package io.sluice.broker.net;

import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.timeout.IdleState;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.broker.auth.Action;
import io.sluice.broker.auth.Authenticator;
import io.sluice.broker.auth.Authorizer;
import io.sluice.broker.security.ConnectionLimits;
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
import io.sluice.storage.StorageFilesExhaustedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.naming.InvalidNameException;
import javax.naming.ldap.LdapName;
import javax.naming.ldap.Rdn;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLPeerUnverifiedException;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Supplier;

/**
 * One client connection: the handshake, then each frame handed to the queue it names. Runs on the
 * connection's event loop; queue work runs on the queue's executor (one task per frame).
 *
 * <p>Errors: a frame that breaks the protocol (malformed, unknown, before HELLO, oversized) gets an
 * ERROR with its code and a CLOSE, and the connection is closed; an operation that fails on its own
 * (unknown queue, unknown message id, bad setting) gets an ERROR and the connection stays usable.
 *
 * <p>Security: every frame that names a queue is checked by the {@link Authorizer} (PUBLISH needs
 * publish, SUBSCRIBE consume, DECLARE/DELETE/PURGE manage); a denial is an ACCESS_DENIED answer and the
 * connection stays usable. Limits answer RESOURCE_LIMIT: over {@code limits.max-connections} or
 * {@code limits.max-connections-per-user} with a CLOSE, over {@code limits.max-queues},
 * {@code limits.max-consumers-per-connection} or {@code limits.max-unacked-per-connection} with an ERROR only.
 *
 * <p>Unacked bound: {@code outstandingCredit} is the credit granted by SUBSCRIBE and CREDIT minus the
 * messages settled by ACK and NACK; a delivered, unacked message keeps its unit, so the unacked
 * messages of the connection never exceed what is outstanding, and grants are capped at the limit.
 */
public final class ConnectionHandler extends ChannelInboundHandlerAdapter implements ClientConnection {
    private static final Logger LOG = LoggerFactory.getLogger(ConnectionHandler.class);

    private final BrokerConfig config;
    private final Authenticator authenticator;
    private final QueueManager queues;
    private final ConnectionSecurity security;
    private ChannelHandlerContext ctx;
    private boolean countedConnection;
    private boolean countedUser;
    /** Credit granted minus messages settled, in total and per consumer tag; see the class javadoc. */
    private long outstandingCredit;
    private final Map<Integer, long[]> outstandingByTag = new HashMap<>();
    private boolean open;
    private String clientName = "?";
    private String user = "";
    private ScheduledFuture<?> handshakeTimeout;
    private final Map<Integer, Subscription> subscriptions = new HashMap<>();
    /** Publish window handed out and not yet given back (messages, payload bytes); see {@link #returnPublishCredit}. */
    private final java.util.concurrent.atomic.AtomicLong windowMessagesOut = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong windowBytesOut = new java.util.concurrent.atomic.AtomicLong();
    private volatile boolean readingPaused;
    /**
     * Frames that arrived while this connection's DECLARE of a new queue, or its DELETE, runs on the
     * declare thread; null when none does. They are handled, in order, once it is answered: a client may
     * send DECLARE and then PUBLISH to that queue without waiting. Reading stops meanwhile, so what is
     * held is at most what one read had already decoded.
     */
    private ArrayDeque<Object> heldInbound;
    private volatile int negotiatedMaxFrameBytes = 64 << 10;

    public ConnectionHandler(BrokerConfig config, Authenticator authenticator, QueueManager queues, ConnectionSecurity security) {
        this.config = config;
        this.authenticator = authenticator;
        this.queues = queues;
        this.security = security;
    }

    private ConnectionLimits limits() {
        return security.limits();
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        String refused = limits().openConnection();
        if (refused != null) {
            LOG.warn("Refusing a connection from {}: {}.", ctx.channel().remoteAddress(), refused);
            fail(ErrorCode.RESOURCE_LIMIT, refused);
            ctx.fireChannelActive();
            return;
        }
        countedConnection = true;
        handshakeTimeout = ctx.executor().schedule(() -> {
            if (!open) {
                limits().countHandshakeTimeout();
                fail(ErrorCode.HANDSHAKE_REQUIRED, "no HELLO within broker.handshake-timeout-ms " + config.broker.handshakeTimeoutMs + " ms");
            }
        }, config.broker.handshakeTimeoutMs, TimeUnit.MILLISECONDS);
        ctx.fireChannelActive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (heldInbound != null) {
            heldInbound.add(msg); // after the declare in progress, in order; see holdInbound
            return;
        }
        boolean handedOff = false;
        try {
            Frame frame = (Frame) msg;
            if (!countedConnection) {
                return;
            }
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
        Authenticator.Result auth = authenticator.authenticate(hello.user(), hello.password(), certificateUser(),
                security.anonymousAllowed());
        if (!auth.accepted()) {
            String rejected = auth.rejected();
            LOG.warn("Authentication failed for a connection from {}: {}.", ctx.channel().remoteAddress(), rejected);
            // A failed attempt costs the client 200 ms before the answer: slows password guessing.
            ctx.executor().schedule(() -> fail(ErrorCode.AUTHENTICATION_FAILED, "authentication failed: " + rejected),
                    200, TimeUnit.MILLISECONDS);
            return;
        }
        String refused = limits().openUserConnection(auth.user());
        if (refused != null) {
            LOG.warn("Refusing a connection from {}: {}.", ctx.channel().remoteAddress(), refused);
            fail(ErrorCode.RESOURCE_LIMIT, refused);
            return;
        }
        countedUser = true;
        open = true;
        handshakeTimeout.cancel(false);
        clientName = hello.clientName();
        user = auth.user();
        // HELLO's maxFrameBytes 0 means "the broker's default" (see HelloFrame), not the 1024-byte floor.
        int wanted = hello.maxFrameBytes() == 0 ? config.broker.maxFrameBytes : Math.max(hello.maxFrameBytes(), 1024);
        int maxFrame = Math.min(config.broker.maxFrameBytes, wanted);
        negotiatedMaxFrameBytes = maxFrame;
        ctx.pipeline().get(FrameDecoder.class).maxFrameBytes(config.broker.maxFrameBytes);
        ctx.pipeline().get(FrameEncoder.class).maxFrameBytes(maxFrame);
        ctx.writeAndFlush(new HelloOkFrame(ProtocolVersion.CURRENT, maxFrame, config.broker.heartbeatIntervalMs,
                config.broker.name, config.broker.publishWindowMessages, config.broker.publishWindowBytes));
        LOG.debug("Connection from {} opened by client '{}' (user '{}').", ctx.channel().remoteAddress(), clientName, user);
    }

    /**
     * The subject CN of a verified TLS client certificate, or null (no TLS, no certificate, or no CN).
     */
    private String certificateUser() {
        io.netty.handler.ssl.SslHandler tls = ctx.pipeline().get(io.netty.handler.ssl.SslHandler.class);
        if (tls == null) {
            return null;
        }
        try {
            Certificate[] chain = tls.engine().getSession().getPeerCertificates();
            if (chain.length == 0 || !(chain[0] instanceof X509Certificate cert)) {
                return null;
            }
            for (Rdn rdn : new LdapName(cert.getSubjectX500Principal().getName()).getRdns()) {
                if (rdn.getType().equalsIgnoreCase("CN")) {
                    return String.valueOf(rdn.getValue());
                }
            }
            return null;
        } catch (SSLPeerUnverifiedException | InvalidNameException e) {
            return null;
        }
    }

    /** True if the user may; else answers ACCESS_DENIED (the connection stays usable) and returns false. */
    private boolean permit(long requestId, Action action, String queue) {
        if (security.authorizer().allowed(user, action, queue)) {
            return true;
        }
        String message = Authorizer.denial(user, action, queue);
        LOG.info("Access denied to {}: {}.", describe(), message);
        error(requestId, ErrorCode.ACCESS_DENIED, message);
        return false;
    }

    /** Returns true if the frame's buffer was handed to a queue, which releases it. */
    private boolean handle(Frame frame) {
        if (frame instanceof PublishFrame publish) {
            if (!security.authorizer().allowed(user, Action.PUBLISH, publish.queue())) {
                rejectPublish(publish, ErrorCode.ACCESS_DENIED, Authorizer.denial(user, Action.PUBLISH, publish.queue()));
                return false;
            }
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
                settle(ack.consumerTag(), ack.messageIds());
                sub.ack(ack);
            }
        } else if (frame instanceof CreditFrame credit) {
            Subscription sub = subscription(credit.consumerTag());
            if (sub != null) {
                sub.credit(grant(credit.consumerTag(), credit.credit(), true));
            }
        } else if (frame instanceof NackFrame nack) {
            Subscription sub = subscription(nack.consumerTag());
            if (sub != null) {
                settle(nack.consumerTag(), nack.messageIds());
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
                release(unsubscribe.consumerTag());
                ctx.writeAndFlush(new OkFrame(unsubscribe.requestId()));
            }
        } else if (frame instanceof DeclareQueueFrame declare) {
            declare(declare);
        } else if (frame instanceof DeleteQueueFrame delete) {
            if (!permit(delete.requestId(), Action.MANAGE, delete.queue())) {
                return false;
            }
            long requestId = delete.requestId();
            String name = delete.queue();
            offLoop(() -> queues.delete(name), (deleted, failure) -> {
                if (failure != null) {
                    exceptionCaught(ctx, unwrap(failure));
                } else if (deleted) {
                    ctx.writeAndFlush(new OkFrame(requestId));
                } else {
                    error(requestId, ErrorCode.UNKNOWN_QUEUE, "queue '" + name + "' does not exist");
                }
            });
        } else if (frame instanceof PurgeQueueFrame purge) {
            if (!permit(purge.requestId(), Action.MANAGE, purge.queue())) {
                return false;
            }
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
            // A queue thread may have given the window back between the sums above and the flag: it
            // then saw readingPaused false and did not resume. Having set the flag, look again; of the
            // two threads at least one sees the other's write (both are volatile or atomic).
            if (windowMessagesOut.get() <= config.broker.publishWindowMessages && windowBytesOut.get() <= config.broker.publishWindowBytes) {
                readingPaused = false;
                if (heldInbound == null) {
                    ctx.channel().config().setAutoRead(true);
                }
            }
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
                    if (heldInbound == null) { // else reading resumes once the declare is answered
                        ctx.channel().config().setAutoRead(true);
                        ctx.read();
                    }
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
        if (!permit(subscribe.requestId(), Action.CONSUME, subscribe.queue())) {
            return;
        }
        int maxConsumers = limits().limits().maxConsumersPerConnection;
        if (subscriptions.size() >= maxConsumers) {
            limits().countRejectedConsumer();
            error(subscribe.requestId(), ErrorCode.RESOURCE_LIMIT, "consumer count " + (subscriptions.size() + 1)
                    + " on this connection would exceed limits.max-consumers-per-connection " + maxConsumers);
            return;
        }
        BrokerQueue queue = queues.get(subscribe.queue());
        if (queue == null) {
            error(subscribe.requestId(), ErrorCode.UNKNOWN_QUEUE, "queue '" + subscribe.queue() + "' does not exist");
            return;
        }
        outstandingByTag.put(subscribe.consumerTag(), new long[1]);
        long credit = grant(subscribe.consumerTag(), subscribe.initialCredit(), false);
        Subscription sub = Subscription.open(queue, this, subscribe.consumerTag(), credit);
        subscriptions.put(subscribe.consumerTag(), sub);
        ctx.writeAndFlush(new OkFrame(subscribe.requestId()));
    }

    /**
     * Grants what fits under {@code limits.max-unacked-per-connection} and returns it. A SUBSCRIBE's
     * initial credit is silently capped; a CREDIT beyond the limit also gets an ERROR RESOURCE_LIMIT.
     */
    private long grant(int tag, long wanted, boolean reportExcess) {
        long max = limits().limits().maxUnackedPerConnection;
        long granted = Math.max(0, Math.min(wanted, max - outstandingCredit));
        if (granted < wanted) {
            limits().countRejectedCredit();
            if (reportExcess) {
                error(0, ErrorCode.RESOURCE_LIMIT, "credit " + wanted + " for consumer tag " + tag + " would bring the connection's"
                        + " outstanding credit " + outstandingCredit + " above limits.max-unacked-per-connection " + max
                        + "; granted " + granted);
            }
        }
        outstandingCredit += granted;
        long[] perTag = outstandingByTag.get(tag);
        if (perTag != null) {
            perTag[0] += granted;
        }
        return granted;
    }

    /** An ACK or NACK frees the credit units of the messages it settles. */
    private void settle(int tag, java.util.List<IdRange> ids) {
        long[] perTag = outstandingByTag.get(tag);
        if (perTag == null) {
            return;
        }
        long settled = 0;
        for (IdRange r : ids) {
            settled += r.to() - r.from() + 1;
        }
        settled = Math.min(settled, perTag[0]);
        perTag[0] -= settled;
        outstandingCredit -= settled;
    }

    private void release(int tag) {
        long[] perTag = outstandingByTag.remove(tag);
        if (perTag != null) {
            outstandingCredit -= perTag[0];
        }
    }

    private void declare(DeclareQueueFrame declare) {
        if (!permit(declare.requestId(), Action.MANAGE, declare.queue())) {
            return;
        }
        if (declare.passive()) {
            BrokerQueue q = queues.get(declare.queue());
            if (q == null) {
                error(declare.requestId(), ErrorCode.UNKNOWN_QUEUE, "queue '" + declare.queue() + "' does not exist");
            } else {
                ctx.writeAndFlush(new OkFrame(declare.requestId(), q.store().unackedMessages()));
            }
            return;
        }
        BrokerQueue existing;
        try {
            // A queue that exists: a comparison of settings, no lock, no file, so it is answered here.
            existing = queues.existing(declare.queue(), declare.settings());
        } catch (RuntimeException e) {
            answerDeclare(declare, null, e);
            return;
        }
        if (existing != null) {
            answerDeclare(declare, existing, null);
            return;
        }
        offLoop(() -> declareWithinLimits(declare), (q, failure) -> answerDeclare(declare, q, failure));
    }

    /**
     * Runs {@code task} on the declare thread and {@code answer} back on this connection's loop,
     * holding the connection's later frames until then (see {@link #heldInbound}).
     */
    private <T> void offLoop(Supplier<T> task, BiConsumer<T, Throwable> answer) {
        holdInbound();
        queues.onDeclareThread(task).whenComplete((result, failure) -> ctx.executor().execute(() -> {
            try {
                if (ctx.channel().isActive()) {
                    answer.accept(result, failure);
                }
            } catch (RuntimeException e) {
                exceptionCaught(ctx, e);
            } finally {
                handleHeldInbound();
            }
        }));
    }

    private static Throwable unwrap(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }

    /** Declares the queue unless that would exceed {@code limits.max-queues}; on the declare thread for a new queue. */
    private BrokerQueue declareWithinLimits(DeclareQueueFrame declare) {
        int maxQueues = limits().limits().maxQueues;
        if (queues.get(declare.queue()) == null && queues.all().size() >= maxQueues) {
            limits().countRejectedQueue();
            throw new QueueLimitException("declaring queue '" + declare.queue() + "' would bring the queue count to "
                    + (queues.all().size() + 1) + ", above limits.max-queues " + maxQueues);
        }
        return queues.declare(declare.queue(), declare.settings());
    }

    private void answerDeclare(DeclareQueueFrame declare, BrokerQueue q, Throwable failure) {
        Throwable e = unwrap(failure);
        if (e == null) {
            ctx.writeAndFlush(new OkFrame(declare.requestId(), q.store().unackedMessages()));
        } else if (e instanceof QueueLimitException || e instanceof StorageFilesExhaustedException) {
            error(declare.requestId(), ErrorCode.RESOURCE_LIMIT, e.getMessage());
        } else if (e instanceof IllegalStateException) {
            error(declare.requestId(), ErrorCode.QUEUE_EXISTS_WITH_DIFFERENT_SETTINGS, e.getMessage());
        } else if (e instanceof IllegalArgumentException) {
            ErrorCode code = e.getMessage().startsWith("queue name") ? ErrorCode.INVALID_QUEUE_NAME : ErrorCode.INVALID_QUEUE_SETTING;
            error(declare.requestId(), code, e.getMessage());
        } else {
            exceptionCaught(ctx, e);
        }
    }

    /** A DECLARE over {@code limits.max-queues}: answered RESOURCE_LIMIT, the connection stays usable. */
    private static final class QueueLimitException extends RuntimeException {
        QueueLimitException(String message) {
            super(message, null, false, false);
        }
    }

    /** Stops handling this connection's frames (and reading) until the declare in progress is answered. */
    private void holdInbound() {
        heldInbound = new ArrayDeque<>();
        ctx.channel().config().setAutoRead(false);
    }

    /** Handles the frames held during a declare, in order; one of them may be a DECLARE that holds the rest again. */
    private void handleHeldInbound() {
        ArrayDeque<Object> held = heldInbound;
        heldInbound = null;
        if (held == null) {
            return; // the connection closed meanwhile and released them
        }
        while (!held.isEmpty()) {
            Object msg = held.poll();
            if (heldInbound != null) {
                heldInbound.add(msg);
            } else if (!ctx.channel().isActive()) {
                ReferenceCountUtil.release(msg); // closed meanwhile, before channelInactive ran
            } else {
                try {
                    channelRead(ctx, msg);
                } catch (RuntimeException e) {
                    exceptionCaught(ctx, e); // as the pipeline would have done
                }
            }
        }
        if (heldInbound == null && !readingPaused && ctx.channel().isActive()) {
            ctx.channel().config().setAutoRead(true);
            ctx.read();
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
            if (pe.errorCode() == ErrorCode.FRAME_TOO_LARGE) {
                limits().countOversizedFrame();
            }
            fail(pe.errorCode(), pe.getMessage());
        } else if (isTlsFailure(cause)) {
            LOG.info("TLS failed on the connection from {}: {}.", ctx.channel().remoteAddress(), root.getMessage());
            ctx.close();
        } else if (root instanceof java.io.IOException) {
            ctx.close();
        } else {
            LOG.error("Connection from {} failed.", ctx.channel().remoteAddress(), cause);
            fail(ErrorCode.INTERNAL_ERROR, "the broker failed on this connection; the broker log has the details");
        }
    }

    private static boolean isTlsFailure(Throwable cause) {
        for (Throwable t = cause; t != null; t = t.getCause()) {
            if (t instanceof SSLException || t instanceof io.netty.handler.ssl.NotSslRecordException) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (countedConnection) {
            countedConnection = false;
            limits().closeConnection();
        }
        if (countedUser) {
            countedUser = false;
            limits().closeUserConnection(user);
        }
        if (handshakeTimeout != null) {
            handshakeTimeout.cancel(false);
        }
        for (Subscription sub : subscriptions.values()) {
            sub.close();
        }
        subscriptions.clear();
        if (heldInbound != null) {
            heldInbound.forEach(ReferenceCountUtil::release);
            heldInbound = null;
        }
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
    public String id() {
        return ctx.channel().id().asShortText();
    }

    @Override
    public boolean isActive() {
        return ctx.channel().isActive();
    }

    @Override
    public int maxFrameBytes() {
        return negotiatedMaxFrameBytes;
    }

    @Override
    public boolean isWritable() {
        return ctx.channel().isWritable();
    }
}
