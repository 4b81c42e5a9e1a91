package io.sluice.broker.net;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.local.LocalAddress;
import io.netty.channel.local.LocalChannel;
import io.netty.channel.local.LocalServerChannel;
import io.netty.util.ReferenceCounted;
import io.sluice.broker.TestAwait;
import io.sluice.broker.auth.Authorizer;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.log.RateLimitedLog;
import io.sluice.broker.queue.QueueCore;
import io.sluice.broker.security.ConnectionLimits;
import io.sluice.broker.security.LoginBackoff;
import io.sluice.protocol.Frame;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One client connection with no socket: a Netty local channel pair on an event loop of its own (the
 * connection's loop; queues keep theirs), the broker's end ending in the handlers a test gives, the
 * client's end keeping every frame it receives. Frames cross as objects, without the codec; a frame
 * that holds a buffer (DELIVER) is counted and released, not kept.
 */
final class LocalConnection implements AutoCloseable {
    private static final AtomicInteger NEXT = new AtomicInteger();

    final EventLoopGroup loop = new DefaultEventLoopGroup(1);
    /** The broker's end of the connection. */
    final Channel broker;
    private final Channel server;
    private final Channel client;
    private final List<Frame> received = new ArrayList<>();

    LocalConnection(ChannelHandler... brokerSide) throws Exception {
        LocalAddress address = new LocalAddress("sluice-local-" + NEXT.incrementAndGet());
        CompletableFuture<Channel> accepted = new CompletableFuture<>();
        server = new ServerBootstrap().group(loop).channel(LocalServerChannel.class)
                .childHandler(new ChannelInitializer<LocalChannel>() {
                    @Override
                    protected void initChannel(LocalChannel ch) {
                        ch.pipeline().addLast(brokerSide);
                        accepted.complete(ch);
                    }
                }).bind(address).sync().channel();
        client = new Bootstrap().group(loop).channel(LocalChannel.class).handler(new SimpleChannelInboundHandler<Frame>() {
            @Override
            protected void channelRead0(ChannelHandlerContext ctx, Frame frame) {
                synchronized (received) {
                    if (!(frame instanceof ReferenceCounted)) {
                        received.add(frame);
                    }
                }
            }
        }).connect(address).sync().channel();
        broker = accepted.get(10, TimeUnit.SECONDS);
    }

    /**
     * A connection past its handshake: a real {@link ClientSessionAdapter} (anonymous, the connection counted in the
     * limits) at the broker's end, in front of {@code core}'s queues; {@code capabilities}: what HELLO_OK granted.
     */
    static LocalConnection inFrontOf(QueueCore core, int capabilities) throws Exception {
        BrokerConfig config = core.config;
        ConnectionSecurity security = new ConnectionSecurity(new Authorizer(config.auth), new ConnectionLimits(config.limits), true,
                new LoginBackoff(config.auth, System::nanoTime), RateLimitedLog.standard("rejected connections"));
        security.limits().openConnection();
        security.limits().openUserConnection("");
        return new LocalConnection(new ClientSessionAdapter(config, core.queues, null, security, "test-client", "", 1 << 20,
                capabilities));
    }

    /** Sends a frame as the client; it reaches the broker's end in order with the others. */
    void send(Frame frame) {
        client.writeAndFlush(frame).syncUninterruptibly();
    }

    /** Everything of that type the client received so far, in order. */
    <T> List<T> received(Class<T> type) {
        synchronized (received) {
            return received.stream().filter(type::isInstance).map(type::cast).toList();
        }
    }

    /** Waits until the client received {@code count} frames of that type; returns them all. */
    <T> List<T> await(Class<T> type, int count) throws InterruptedException {
        TestAwait.until(count + " " + type.getSimpleName() + " at the client, got " + received(Frame.class),
                () -> received(type).size() >= count);
        return received(type);
    }

    /** Runs {@code task} on the connection's loop and waits for it (everything the loop had before has run). */
    <T> T onLoop(Callable<T> task) {
        try {
            return loop.submit(task).get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError("a task on the connection's loop failed", e);
        }
    }

    /** Whether the broker's end reads (Netty's autoRead), as its loop sees it. */
    boolean reading() {
        return onLoop(() -> broker.config().isAutoRead());
    }

    @Override
    public void close() {
        client.close().syncUninterruptibly();
        server.close().syncUninterruptibly();
        loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
}
