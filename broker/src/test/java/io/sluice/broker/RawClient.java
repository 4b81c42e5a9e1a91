package io.sluice.broker;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.ReferenceCountUtil;
import io.sluice.protocol.DeliverCursor;
import io.sluice.protocol.DeliverFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.FrameDecoder;
import io.sluice.protocol.FrameEncoder;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.HelloOkFrame;
import io.sluice.protocol.PublishCreditFrame;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A test peer that speaks raw frames: what it receives lands in a queue (DELIVER frames are copied
 * into {@link Delivery} records so no buffer outlives the handler; PUBLISH_CREDIT frames are only counted).
 */
final class RawClient implements AutoCloseable {
    record Delivery(int consumerTag, long id, int deliveryCount, byte[] headers, byte[] payload) {
    }

    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final Channel channel;
    final BlockingQueue<Object> received = new LinkedBlockingQueue<>();
    /** PUBLISH_CREDIT frames are counted here, not queued: they may arrive between any two answers. */
    final AtomicLong publishCredit = new AtomicLong();
    /** The bytes of those PUBLISH_CREDIT frames. */
    final AtomicLong publishCreditBytes = new AtomicLong();

    RawClient(int port) throws InterruptedException {
        channel = new Bootstrap().group(group).channel(NioSocketChannel.class)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new FrameDecoder(16 << 20), new FrameEncoder(16 << 20),
                                new SimpleChannelInboundHandler<Frame>(false) {
                                    @Override
                                    protected void channelRead0(ChannelHandlerContext ctx, Frame frame) {
                                        try {
                                            if (frame instanceof DeliverFrame deliver) {
                                                DeliverCursor c = deliver.cursor();
                                                while (c.next()) {
                                                    byte[] headers = new byte[c.encodedHeaders().readableBytes()];
                                                    c.encodedHeaders().getBytes(c.encodedHeaders().readerIndex(), headers);
                                                    byte[] payload = new byte[c.payload().readableBytes()];
                                                    c.payload().getBytes(c.payload().readerIndex(), payload);
                                                    received.add(new Delivery(deliver.consumerTag(), c.messageId(), c.deliveryCount(), headers, payload));
                                                }
                                            } else if (frame instanceof PublishCreditFrame credit) {
                                                publishCreditBytes.addAndGet(credit.bytes()); // before the messages a test waits for
                                                publishCredit.addAndGet(credit.messages());
                                            } else {
                                                received.add(frame);
                                            }
                                        } finally {
                                            ReferenceCountUtil.release(frame);
                                        }
                                    }

                                    @Override
                                    public void channelInactive(ChannelHandlerContext ctx) {
                                        received.add("closed");
                                    }
                                });
                    }
                }).connect("127.0.0.1", port).sync().channel();
    }

    static RawClient connected(int port) throws InterruptedException {
        RawClient c = new RawClient(port);
        c.send(new HelloFrame(1, 1, "test", 1 << 20, 0, "", ""));
        c.expect(HelloOkFrame.class);
        return c;
    }

    void send(Frame frame) {
        channel.writeAndFlush(frame).syncUninterruptibly();
    }

    /** Writes the frame and returns at once: a test whose writes the broker stops reading must not wait for them. */
    void sendAsync(Frame frame) {
        channel.writeAndFlush(frame);
    }

    void sendRaw(ByteBuf bytes) {
        channel.writeAndFlush(bytes).syncUninterruptibly();
    }

    ByteBufAllocator alloc() {
        return channel.alloc();
    }

    <T> T expect(Class<T> type) throws InterruptedException {
        return expect(type, java.time.Duration.ofSeconds(10));
    }

    /** The next frame received, which must be a {@code type}, waiting up to {@code timeout} for it. */
    <T> T expect(Class<T> type, java.time.Duration timeout) throws InterruptedException {
        Object o = received.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
        if (!type.isInstance(o)) {
            throw new AssertionError("expected a " + type.getSimpleName() + ", got " + o);
        }
        return type.cast(o);
    }

    List<Delivery> deliveries(int n) throws InterruptedException {
        return deliveries(n, java.time.Duration.ofSeconds(20));
    }

    /** The next {@code n} deliveries, the frames between them passed; fails if they take longer than {@code timeout}. */
    List<Delivery> deliveries(int n, java.time.Duration timeout) throws InterruptedException {
        List<Delivery> out = new ArrayList<>();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (out.size() < n) {
            Object o = received.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (o == null) {
                throw new AssertionError("got " + out.size() + " of " + n + " deliveries");
            }
            if (o instanceof Delivery d) {
                out.add(d);
            }
        }
        return out;
    }

    /** This end's address: the remote address of the broker's channel for this connection. */
    java.net.SocketAddress localAddress() {
        return channel.localAddress();
    }

    boolean isOpen() {
        return channel.isActive();
    }

    @Override
    public void close() {
        channel.close().syncUninterruptibly();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
}
