package io.sluice.client;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.sluice.client.internal.IdRanges;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.DeleteQueueFrame;
import io.sluice.protocol.DeliverFrameBuilder;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.FrameDecoder;
import io.sluice.protocol.FrameEncoder;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.HelloOkFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishCursor;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PurgeQueueFrame;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxPublishFrame;
import io.sluice.protocol.TxRollbackFrame;
import io.sluice.protocol.UnsubscribeFrame;

import java.net.InetSocketAddress;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArraySet;
import java.util.concurrent.Executor;
import java.util.function.UnaryOperator;

/**
 * A broker stand-in for client tests: answers HELLO, queue requests and SUBSCRIBE with success, confirms
 * publishes (or fails one chosen sequence, or stays silent), answers TX_COMMIT and TX_ROLLBACK with OK (or
 * a chosen ERROR, or silence), pushes DELIVER frames on demand and records every frame it receives.
 * Thread-safe; its one thread is named {@code fake-broker-*}.
 */
final class FakeBroker implements AutoCloseable {
    static final int MAX_FRAME_BYTES = 1 << 20;

    private final EventLoopGroup group =
            new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("fake-broker", true), NioIoHandler.newFactory());
    private final Channel server;
    private final Set<Channel> clients = new CopyOnWriteArraySet<>();
    /**
     * Every frame received except PUBLISH, whose sequences go to {@link #publishedSequences}, and
     * TX_PUBLISH, recorded in its place as a {@link TxPublished} (the frame's buffer is released).
     */
    final Queue<Object> received = new ConcurrentLinkedQueue<>();
    final Queue<Long> publishedSequences = new ConcurrentLinkedQueue<>();
    /** The payloads of {@link #publishedSequences} as UTF-8, in the same order. */
    final Queue<String> publishedPayloads = new ConcurrentLinkedQueue<>();
    volatile boolean confirmPublishes = true;
    volatile long failSequence = -1;
    /** The publish window HELLO_OK gives; the broker sends no PUBLISH_CREDIT by itself. */
    volatile int publishWindowMessages = 100_000;
    /** The epochs PRODUCER_INIT of a new instance is given, counting up. */
    final java.util.concurrent.atomic.AtomicInteger nextEpoch = new java.util.concurrent.atomic.AtomicInteger();
    /** Whether SUBSCRIBE gets its OK (a test answers it late by hand). */
    volatile boolean answerSubscribes = true;
    /** Whether UNSUBSCRIBE gets its OK (a test answers it late by hand). */
    volatile boolean answerUnsubscribes = true;
    /** When set, the next {@link #subscribeRefusals} SUBSCRIBEs are answered by ERROR with this code. */
    volatile ErrorCode refuseSubscribes;
    final java.util.concurrent.atomic.AtomicInteger subscribeRefusals = new java.util.concurrent.atomic.AtomicInteger();
    /** When set, the next {@link #producerInitRefusals} PRODUCER_INITs that resume an epoch are answered by ERROR with this code. */
    volatile ErrorCode refuseProducerResumes;
    final java.util.concurrent.atomic.AtomicInteger producerInitRefusals = new java.util.concurrent.atomic.AtomicInteger();
    /** While set, PRODUCER_INITs that resume an epoch are held unanswered until {@link #answerHeldProducerResumes()}. */
    volatile boolean holdProducerResumes;
    private final Queue<Object[]> heldProducerResumes = new ConcurrentLinkedQueue<>();
    /** While set, HELLOs are held unanswered until {@link #answerHeldHellos()}: a test acts while a handshake is under way. */
    volatile boolean holdHellos;
    private final Queue<Object[]> heldHellos = new ConcurrentLinkedQueue<>();
    /** The maxFrameBytes HELLO_OK gives: the largest frame the client may send (the fake itself reads up to {@link #MAX_FRAME_BYTES}). */
    volatile int helloMaxFrameBytes = MAX_FRAME_BYTES;
    /** The byte window HELLO_OK gives. */
    volatile long publishWindowBytes = 1L << 40;
    /** The heartbeat interval HELLO_OK gives (0: none); the fake never sends a HEARTBEAT itself. */
    volatile int heartbeatIntervalMs;
    /**
     * When set, a frame it maps to an answer (not null) gets that answer instead of the usual one: a test answers a
     * request with a frame of the wrong type.
     */
    volatile java.util.function.Function<Frame, Frame> answerInstead;
    /** Whether TX_COMMIT gets an answer at all. */
    volatile boolean answerCommits = true;
    /** When set, TX_COMMIT is answered by ERROR with this code and {@link #refusalMessage}. */
    volatile ErrorCode refuseCommits;
    volatile String refusalMessage = "";
    /** The capabilities HELLO_OK grants of those the HELLO asked for; 0 plays a broker that predates them. */
    volatile int servedCapabilities = HelloFrame.KNOWN_CAPABILITIES;

    /** A TX_PUBLISH as received: each message as {@code producerId/sequence payload [key=value, ...]}. */
    record TxPublished(long txnId, String queue, List<String> messages) {
    }

    FakeBroker() {
        server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        clients.add(ch);
                        ch.closeFuture().addListener(ignored -> clients.remove(ch));
                        ch.pipeline().addLast(new FrameDecoder(MAX_FRAME_BYTES), new FrameEncoder(MAX_FRAME_BYTES),
                                new Handler());
                    }
                }).bind("127.0.0.1", 0).syncUninterruptibly().channel();
    }

    /** A connection to this broker with a 5 s request timeout that reconnects at once (20 ms, up to 200 ms). */
    Connection connectReconnecting() {
        return connectReconnecting(java.time.Duration.ofSeconds(5));
    }

    /** As {@link #connectReconnecting()}, with {@code requestTimeout}. */
    Connection connectReconnecting(java.time.Duration requestTimeout) {
        return connectReconnecting(requestTimeout, UnaryOperator.identity());
    }

    /** As {@link #connectReconnecting()}, its callbacks handed to what {@code callbackExecutorSeam} makes of their executor. */
    Connection connectReconnecting(UnaryOperator<Executor> callbackExecutorSeam) {
        return connectReconnecting(java.time.Duration.ofSeconds(5), callbackExecutorSeam);
    }

    private Connection connectReconnecting(java.time.Duration requestTimeout, UnaryOperator<Executor> callbackExecutorSeam) {
        return Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(port())
                .requestTimeout(requestTimeout)
                .reconnectPolicy(new ReconnectPolicy(true, java.time.Duration.ofMillis(20), java.time.Duration.ofMillis(200), 2.0, 0.2))
                .build(), callbackExecutorSeam);
    }

    int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    long count(Class<?> type) {
        return received.stream().filter(type::isInstance).count();
    }

    <T> List<T> frames(Class<T> type) {
        return received.stream().filter(type::isInstance).map(type::cast).toList();
    }

    /** Sends one DELIVER with these ids (delivery count 1, payload "m" + id) to every connected client. */
    void deliver(int consumerTag, long... ids) {
        for (Channel client : clients) {
            client.eventLoop().execute(() -> {
                DeliverFrameBuilder builder = new DeliverFrameBuilder(client.alloc(), consumerTag);
                for (long id : ids) {
                    builder.add(id, 1, List.of(), ("m" + id).getBytes(java.nio.charset.StandardCharsets.UTF_8));
                }
                client.writeAndFlush(builder.build());
            });
        }
    }

    /**
     * The settlements read, in order: each ACK's ids as "ACK id", each NACK's as "NACK id", each TX_ACK's as "TX_ACK id",
     * and each UNSUBSCRIBE and TX_COMMIT.
     */
    List<String> settlementsInOrder() {
        List<String> seen = new java.util.ArrayList<>();
        for (Object frame : received) {
            if (frame instanceof io.sluice.protocol.AckFrame ack) {
                ack.messageIds().forEach(range -> ids(range, "ACK", seen));
            } else if (frame instanceof io.sluice.protocol.NackFrame nack) {
                nack.messageIds().forEach(range -> ids(range, "NACK", seen));
            } else if (frame instanceof io.sluice.protocol.TxAckFrame txAck) {
                txAck.messageIds().forEach(range -> ids(range, "TX_ACK", seen));
            } else if (frame instanceof UnsubscribeFrame) {
                seen.add("UNSUBSCRIBE");
            } else if (frame instanceof TxCommitFrame) {
                seen.add("TX_COMMIT");
            }
        }
        return seen;
    }

    private static void ids(IdRange range, String type, List<String> into) {
        for (long id = range.from(); id <= range.to(); id++) {
            into.add(type + " " + id);
        }
    }

    /**
     * Writes {@code frame} to every client; from a test's thread, returns once it is written. Not before: a write from
     * outside the loop is a task, which the loop may run after reading and answering a request the test sends next (it
     * handles what it read before its tasks), so a test's round trip after it would not come after the frame.
     */
    void send(Frame frame) {
        for (Channel client : clients) {
            ChannelFuture written = client.writeAndFlush(frame);
            if (!client.eventLoop().inEventLoop()) {
                written.awaitUninterruptibly();
            }
        }
    }

    /** Answers the PRODUCER_INITs held by {@link #holdProducerResumes} with PRODUCER_OK, resuming their epoch. */
    void answerHeldProducerResumes() {
        answerHeldProducerResumes(init -> new io.sluice.protocol.ProducerOkFrame(init.requestId(),
                io.sluice.protocol.ProducerIds.forName(init.producerName()), init.epoch(), 0));
    }

    /** Answers the PRODUCER_INITs held by {@link #holdProducerResumes} with what {@code answer} makes of each. */
    void answerHeldProducerResumes(java.util.function.Function<io.sluice.protocol.ProducerInitFrame, Frame> answer) {
        Object[] held;
        while ((held = heldProducerResumes.poll()) != null) {
            ((ChannelHandlerContext) held[0]).writeAndFlush(answer.apply((io.sluice.protocol.ProducerInitFrame) held[1]));
        }
    }

    /**
     * Answers the HELLOs held by {@link #holdHellos} with HELLO_OK and returns once the answers are written to their
     * sockets, so that the client can read them as soon as its network thread looks.
     */
    void answerHeldHellos() {
        holdHellos = false;
        Object[] held;
        while ((held = heldHellos.poll()) != null) {
            ((ChannelHandlerContext) held[0]).writeAndFlush(helloOk((HelloFrame) held[1])).syncUninterruptibly();
        }
    }

    private HelloOkFrame helloOk(HelloFrame hello) {
        return new HelloOkFrame(1, helloMaxFrameBytes, heartbeatIntervalMs, "fake", publishWindowMessages, publishWindowBytes,
                hello.capabilities() & servedCapabilities);
    }

    /** Drops the connections and returns once a reconnect's HELLO arrived, held unanswered ({@link #holdHellos}). */
    void dropConnectionsAndHoldTheReconnect() {
        long hellos = count(HelloFrame.class);
        holdHellos = true;
        dropConnections();
        TestWait.until(() -> count(HelloFrame.class) > hellos);
    }

    void dropConnections() {
        for (Channel client : clients) {
            client.close().syncUninterruptibly();
        }
    }

    @Override
    public void close() {
        server.close().syncUninterruptibly();
        dropConnections();
        group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).syncUninterruptibly();
    }

    private final class Handler extends SimpleChannelInboundHandler<Frame> {
        @Override
        protected void channelRead0(ChannelHandlerContext context, Frame frame) {
            if (frame instanceof PublishFrame publish) {
                onPublish(context, publish);
                return;
            }
            if (frame instanceof TxPublishFrame txPublish) {
                received.add(summary(txPublish));
                return;
            }
            java.util.function.Function<Frame, Frame> instead = answerInstead;
            Frame insteadAnswer = instead == null ? null : instead.apply(frame);
            // A frame held unanswered is queued before it is recorded: a test that waits to see it recorded and then
            // answers what is held finds it there. Recorded first, the answer could find the queue still empty and
            // the frame would then wait for good.
            if (insteadAnswer == null && held(context, frame)) {
                received.add(frame);
                return;
            }
            received.add(frame);
            if (insteadAnswer != null) {
                context.writeAndFlush(insteadAnswer);
            } else if (frame instanceof HelloFrame hello) {
                context.writeAndFlush(helloOk(hello));
            } else if (frame instanceof DeclareQueueFrame declare) {
                context.writeAndFlush(new OkFrame(declare.requestId(), 0));
            } else if (frame instanceof DeleteQueueFrame delete) {
                context.writeAndFlush(new OkFrame(delete.requestId(), 0));
            } else if (frame instanceof PurgeQueueFrame purge) {
                context.writeAndFlush(new OkFrame(purge.requestId(), 0));
            } else if (frame instanceof io.sluice.protocol.ProducerInitFrame init) {
                ErrorCode refusal = refuseProducerResumes;
                if (init.epoch() >= 0 && refusal != null && producerInitRefusals.getAndDecrement() > 0) {
                    context.writeAndFlush(new ErrorFrame(init.requestId(), refusal, "refused by the fake broker"));
                    return;
                }
                int epoch = init.epoch() < 0 ? nextEpoch.incrementAndGet() : init.epoch();
                context.writeAndFlush(new io.sluice.protocol.ProducerOkFrame(init.requestId(),
                        io.sluice.protocol.ProducerIds.forName(init.producerName()), epoch, 0));
            } else if (frame instanceof SubscribeFrame subscribe) {
                ErrorCode refusal = refuseSubscribes;
                if (refusal != null && subscribeRefusals.getAndDecrement() > 0) {
                    context.writeAndFlush(new ErrorFrame(subscribe.requestId(), refusal, "refused by the fake broker"));
                } else if (answerSubscribes) {
                    context.writeAndFlush(new OkFrame(subscribe.requestId()));
                }
            } else if (frame instanceof UnsubscribeFrame unsubscribe && answerUnsubscribes) {
                context.writeAndFlush(new OkFrame(unsubscribe.requestId()));
            } else if (frame instanceof TxCommitFrame commit && answerCommits) {
                ErrorCode refusal = refuseCommits;
                context.writeAndFlush(refusal == null ? new OkFrame(commit.requestId())
                        : new ErrorFrame(commit.requestId(), refusal, refusalMessage));
            } else if (frame instanceof TxRollbackFrame rollback) {
                context.writeAndFlush(new OkFrame(rollback.requestId()));
            }
        }

        /** Whether {@code frame} is held unanswered ({@link #holdHellos}, {@link #holdProducerResumes}), queued if so. */
        private boolean held(ChannelHandlerContext context, Frame frame) {
            if (frame instanceof HelloFrame hello && holdHellos) {
                heldHellos.add(new Object[] {context, hello});
                return true;
            }
            boolean refused = refuseProducerResumes != null && producerInitRefusals.get() > 0;
            if (frame instanceof io.sluice.protocol.ProducerInitFrame init && init.epoch() >= 0 && holdProducerResumes
                    && !refused) {
                heldProducerResumes.add(new Object[] {context, init});
                return true;
            }
            return false;
        }

        private TxPublished summary(TxPublishFrame frame) {
            List<String> messages = new java.util.ArrayList<>();
            PublishCursor cursor = frame.publish().cursor();
            while (cursor.next()) {
                List<String> headers = cursor.headers().stream().map(header -> header.key() + "="
                        + new String(header.value(), java.nio.charset.StandardCharsets.UTF_8)).toList();
                messages.add(cursor.producerId() + "/" + cursor.sequence() + " "
                        + cursor.payload().toString(java.nio.charset.StandardCharsets.UTF_8) + " " + headers);
            }
            return new TxPublished(frame.txnId(), frame.publish().queue(), messages);
        }

        private void onPublish(ChannelHandlerContext context, PublishFrame publish) {
            PublishCursor cursor = publish.cursor();
            long[] confirmed = new long[publish.messageCount()];
            int count = 0;
            long producerId = 0;
            while (cursor.next()) {
                producerId = cursor.producerId();
                publishedSequences.add(cursor.sequence());
                publishedPayloads.add(cursor.payload().toString(java.nio.charset.StandardCharsets.UTF_8));
                if (cursor.sequence() == failSequence) {
                    context.write(new PublishErrorFrame(producerId, IdRange.single(cursor.sequence()),
                            ErrorCode.QUEUE_BLOCKED, "quotaHardMessages: 10 ready, limit 10"));
                } else {
                    confirmed[count++] = cursor.sequence();
                }
            }
            if (confirmPublishes && count > 0) {
                context.write(new ConfirmFrame(producerId, IdRanges.of(confirmed, count)));
            }
            context.flush();
        }
    }
}
