package io.sluice.broker.net;

import io.netty.channel.ChannelInitializer;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.timeout.IdleStateHandler;
import io.sluice.broker.auth.Authenticator;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.queue.QueueManager;
import io.sluice.protocol.FrameDecoder;
import io.sluice.protocol.FrameEncoder;

import java.util.concurrent.TimeUnit;

/** The pipeline of a client connection: frame codec, heartbeat timer, connection handler. */
public final class BrokerChannelInitializer extends ChannelInitializer<SocketChannel> {
    /** Frames accepted before the handshake: a HELLO is small, and nobody may send megabytes unauthenticated. */
    static final int PRE_HANDSHAKE_MAX_FRAME_BYTES = 64 << 10;

    private final BrokerConfig config;
    private final Authenticator authenticator;
    private final QueueManager queues;
    private final ChannelGroup channels;

    public BrokerChannelInitializer(BrokerConfig config, Authenticator authenticator, QueueManager queues, ChannelGroup channels) {
        this.config = config;
        this.authenticator = authenticator;
        this.queues = queues;
        this.channels = channels;
    }

    @Override
    protected void initChannel(SocketChannel ch) {
        channels.add(ch);
        int heartbeat = config.broker.heartbeatIntervalMs;
        ch.pipeline()
                .addLast(new FrameDecoder(PRE_HANDSHAKE_MAX_FRAME_BYTES))
                .addLast(new FrameEncoder(config.broker.maxFrameBytes));
        if (heartbeat > 0) {
            ch.pipeline().addLast(new IdleStateHandler(2L * heartbeat, heartbeat, 0, TimeUnit.MILLISECONDS));
        }
        ch.pipeline().addLast(new ConnectionHandler(config, authenticator, queues));
    }
}
