package io.sluice.broker.net;

import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.util.ReferenceCountUtil;
import io.sluice.broker.auth.Action;
import io.sluice.broker.auth.Authorizer;
import io.sluice.broker.security.ConnectionLimits;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.ClientConnection;
import io.sluice.broker.queue.QueueManager;
import io.sluice.broker.error.ErrorCodes;
import io.sluice.broker.queue.ConnectionCredit;
import io.sluice.client.internal.LoopBatcher;
import io.sluice.broker.queue.Subscription;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.CreditFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.DeleteQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.HeartbeatFrame;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishCreditFrame;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishCursor;
import io.sluice.protocol.PurgeQueueFrame;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.UnsubscribeFrame;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.BiConsumer;
import java.util.function.Supplier;

/**
 * One open client connection (after the {@link HandshakeHandler}): each frame becomes a call on the
 * queue it names, and what queues send back reaches the socket through {@link #write}. Runs on the
 * connection's event loop; queue work runs on the queue's executor (one task per frame).
 *
 * <p>Errors: a frame that breaks the protocol (malformed, unknown, oversized) gets an
 * ERROR with its code and a CLOSE, and the connection is closed; an operation that fails on its own
 * (unknown queue, unknown message id, bad setting) gets an ERROR and the connection stays usable.
 *
 * <p>Security: every frame that names a queue is checked by the {@link Authorizer} (PUBLISH needs
 * publish, SUBSCRIBE consume, DECLARE/DELETE/PURGE manage); a denial is an ACCESS_DENIED answer and the
 * connection stays usable. Limits answer RESOURCE_LIMIT: over {@code limits.max-connections} or
 * {@code limits.max-connections-per-user} with a CLOSE, over {@code limits.max-queues},
 * {@code limits.max-consumers-per-connection} or {@code limits.max-unacked-per-connection} with an ERROR only.
 *
 * <p>Unacked bound: the connection's {@link ConnectionCredit} counts the credit granted by SUBSCRIBE
 * and CREDIT minus the messages the queues settled (ACK, NACK) or took back from a consumer that
 * left; a delivered, unacked message keeps its unit, so the unacked messages of the connection never
 * exceed the limit. The queues grant and settle, each on its executor, in frame order.
 */
public final class ConnectionHandler extends ProtocolHandler implements ClientConnection {

    private final BrokerConfig config;
    private final QueueManager queues;
    private ChannelHandlerContext ctx;
    /** Set with {@code ctx}, before any queue can know this connection; see {@link #write}. */
    private LoopBatcher<Frame> outbound;
    /** Credit granted minus messages settled, over every consumer; see the class javadoc. Made at the first SUBSCRIBE. */
    private ConnectionCredit unackedBound;
    private final String clientName;
    private final String user;
    private final Map<Integer, Subscription> subscriptions = new HashMap<>();
    /** Publish window handed out and not yet given back (messages, payload bytes); see {@link #returnPublishCredit}. */
    private final java.util.concurrent.atomic.AtomicLong windowMessagesOut = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong windowBytesOut = new java.util.concurrent.atomic.AtomicLong();
    private volatile boolean readingPaused;
    /**
     * Frames that arrived while this connection's DECLAREs of new queues, or its DELETE, run on the
     * declare thread; null when none does. They are handled, in order, once all of those are answered:
     * a client may send DECLARE and then PUBLISH to that queue without waiting. One exception, rule
     * "declares do not wait for declares": a DECLARE (not passive) arriving while only declares are in
     * flight and nothing is held yet is handled at once, so that declares pipelined on one connection
     * reach the declare thread together and share its group (docs/protocol.md, "Queue management").
     * Reading stops meanwhile, so what is held is at most what one read had already decoded.
     */
    private ArrayDeque<Object> heldInbound;
    /** Tasks of this connection on the declare thread, not yet answered; of them, declares. */
    private int offLoopInFlight;
    private int declaresInFlight;
    private final int negotiatedMaxFrameBytes;

    /**
     * An open connection, put in the pipeline by the {@link HandshakeHandler} once HELLO_OK is sent;
     * it owns the connection's counts in {@code limits.max-connections} and
     * {@code limits.max-connections-per-user} from then on.
     */
    ConnectionHandler(BrokerConfig config, QueueManager queues, ConnectionSecurity security, String clientName, String user,
                      int negotiatedMaxFrameBytes) {
        super(security);
        this.config = config;
        this.queues = queues;
        this.clientName = clientName;
        this.user = user;
        this.negotiatedMaxFrameBytes = negotiatedMaxFrameBytes;
    }

    private ConnectionLimits limits() {
        return security.limits();
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        this.outbound = new LoopBatcher<>(ctx.executor(), new OutboundFrames());
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (heldInbound != null && !passesHeldDeclares(msg)) {
            heldInbound.add(msg); // after the declare in progress, in order; see holdInbound
            return;
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
        write(new PublishCreditFrame(messages, bytes));
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
        Subscription sub = Subscription.open(queue, this, subscribe.consumerTag(), subscribe.initialCredit(), connectionCredit());
        subscriptions.put(subscribe.consumerTag(), sub);
        ctx.writeAndFlush(new OkFrame(subscribe.requestId()));
    }

    private ConnectionCredit connectionCredit() {
        if (unackedBound == null) {
            unackedBound = new ConnectionCredit(limits().limits().maxUnackedPerConnection, limits()::countRejectedCredit);
        }
        return unackedBound;
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
        // Checked against limits.max-queues on the declare thread, exactly, with the declares grouped with it.
        awaitOffLoop(queues.declareGrouped(declare.queue(), declare.settings(), limits().limits().maxQueues), true,
                (q, failure) -> answerDeclare(declare, q, failure));
    }

    /** Rule "declares do not wait for declares" (see {@link #heldInbound}). */
    private boolean passesHeldDeclares(Object msg) {
        return heldInbound.isEmpty() && offLoopInFlight == declaresInFlight
                && msg instanceof DeclareQueueFrame declare && !declare.passive();
    }

    /**
     * Runs {@code task} on the declare thread and {@code answer} back on this connection's loop,
     * holding the connection's later frames until then (see {@link #heldInbound}).
     */
    private <T> void offLoop(Supplier<T> task, BiConsumer<T, Throwable> answer) {
        awaitOffLoop(queues.onDeclareThread(task), false, answer);
    }

    private <T> void awaitOffLoop(CompletableFuture<T> work, boolean isDeclare, BiConsumer<T, Throwable> answer) {
        holdInbound();
        offLoopInFlight++;
        if (isDeclare) {
            declaresInFlight++;
        }
        work.whenComplete((result, failure) -> ctx.executor().execute(() -> {
            offLoopInFlight--;
            if (isDeclare) {
                declaresInFlight--;
            }
            try {
                if (ctx.channel().isActive()) {
                    answer.accept(result, failure);
                }
            } catch (RuntimeException e) {
                exceptionCaught(ctx, e);
            } finally {
                if (offLoopInFlight == 0) {
                    handleHeldInbound();
                }
            }
        }));
    }

    private static Throwable unwrap(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }

    private void answerDeclare(DeclareQueueFrame declare, BrokerQueue q, Throwable failure) {
        Throwable e = unwrap(failure);
        if (e == null) {
            ctx.writeAndFlush(new OkFrame(declare.requestId(), q.store().unackedMessages()));
        } else if (ErrorCodes.of(e) != ErrorCode.INTERNAL_ERROR) {
            if (ErrorCodes.of(e) == ErrorCode.RESOURCE_LIMIT) {
                limits().countRejectedQueue();
            }
            error(declare.requestId(), ErrorCodes.of(e), e.getMessage());
        } else {
            exceptionCaught(ctx, e);
        }
    }

    /** Stops handling this connection's frames (and reading) until the declares and deletes in progress are answered. */
    private void holdInbound() {
        if (heldInbound == null) {
            heldInbound = new ArrayDeque<>();
            ctx.channel().config().setAutoRead(false);
        }
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
            if (!ctx.channel().isActive()) {
                ReferenceCountUtil.release(msg); // closed meanwhile, before channelInactive ran
            } else {
                try {
                    channelRead(ctx, msg); // holds it again behind a declare or delete it started
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

    private void fail(ErrorCode code, String message) {
        fail(ctx, code, message);
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
    public void channelInactive(ChannelHandlerContext ctx) {
        limits().closeConnection();
        limits().closeUserConnection(user);
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

    /** The client name of HELLO; for the admin API. */
    public String client() {
        return clientName;
    }

    /** The user of HELLO ("" if anonymous); for the admin API (a connection not yet past HELLO has no ConnectionHandler). */
    public String user() {
        return user;
    }

    // ------------------------------------------------------------------ ClientConnection

    /**
     * Queues a frame from any thread. On the connection's own loop it is written at once; from a
     * queue's executor it joins the frames that executor hands over until the connection's loop
     * drains them, in one task that ends with one flush, instead of a task per write and per flush.
     */
    @Override
    public void write(Frame frame) {
        if (ctx.executor().inEventLoop()) {
            ctx.write(frame, ctx.voidPromise());
        } else {
            outbound.submit(frame);
        }
    }

    /** On the loop, flushes; from elsewhere, nothing to do: the drain of the frames handed over ends with a flush. */
    @Override
    public void flush() {
        if (ctx.executor().inEventLoop()) {
            ctx.flush();
        }
    }

    /** Frames from queue executors, written on the connection's loop in one task per drain. */
    private final class OutboundFrames implements LoopBatcher.Sink<Frame> {
        @Override
        public void onLoop(Frame frame) {
            ctx.write(frame, ctx.voidPromise());
        }

        @Override
        public void endOfBatch() {
            ctx.flush();
        }

        @Override
        public void rejected(Frame frame) {
            ReferenceCountUtil.release(frame); // the connection's loop is gone: so is the connection
        }
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
