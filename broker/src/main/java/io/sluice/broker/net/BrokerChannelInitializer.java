package io.sluice.broker.net;

import io.netty.channel.ChannelInitializer;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.timeout.IdleStateHandler;
import io.sluice.client.internal.WriterIdleTimer;
import io.sluice.broker.auth.Authenticator;
import io.sluice.broker.auth.Authorizer;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.metrics.NetworkCounters;
import io.sluice.broker.metrics.TrafficCountHandler;
import io.sluice.broker.queue.QueueManager;
import io.sluice.broker.txn.TransactionCoordinator;
import io.sluice.broker.security.ConnectionLimits;
import io.sluice.broker.security.ListenerExposure;
import io.sluice.broker.security.LoginBackoff;
import io.sluice.broker.log.RateLimitedLog;
import io.sluice.broker.security.TlsContexts;
import io.sluice.protocol.FrameDecoder;
import io.sluice.protocol.FrameEncoder;

import java.util.concurrent.TimeUnit;

/**
 * The pipeline of a client connection: byte counter (with metrics), TLS (when {@code tls.enabled}),
 * frame codec, frame counter, heartbeat timer, handshake handler (replaced by the session adapter
 * at HELLO_OK). Built once per broker start, so the security objects it owns (authorizer, limits
 * and their counters) live as long as the listener.
 */
public final class BrokerChannelInitializer extends ChannelInitializer<SocketChannel> {
    /** Frames accepted before the handshake: a HELLO is small, and nobody may send megabytes unauthenticated. */
    static final int PRE_HANDSHAKE_MAX_FRAME_BYTES = 64 << 10;

    private final BrokerConfig config;
    private final Authenticator authenticator;
    private final QueueManager queues;
    /** Null only in tests that serve no transactions. */
    private final TransactionCoordinator transactions;
    private final ChannelGroup channels;
    private final ConnectionSecurity security;
    private final SslContext sslContext;
    private final TrafficCountHandler byteCounter;
    private final TrafficCountHandler frameCounter;

    public BrokerChannelInitializer(BrokerConfig config, Authenticator authenticator, QueueManager queues, ChannelGroup channels) {
        this(config, authenticator, queues, null, channels, null);
    }

    /** With {@code network} non-null, each pipeline also counts its bytes and frames into it. */
    public BrokerChannelInitializer(BrokerConfig config, Authenticator authenticator, QueueManager queues,
                                    TransactionCoordinator transactions, ChannelGroup channels, NetworkCounters network) {
        this.transactions = transactions;
        this.byteCounter = network == null ? null : TrafficCountHandler.bytes(network);
        this.frameCounter = network == null ? null : TrafficCountHandler.frames(network);
        this.config = config;
        this.authenticator = authenticator;
        this.queues = queues;
        this.channels = channels;
        this.sslContext = TlsContexts.server(config.tls);
        this.security = new ConnectionSecurity(new Authorizer(config.auth), new ConnectionLimits(config.limits),
                ListenerExposure.anonymousAllowed(config), new LoginBackoff(config.auth, System::nanoTime), RateLimitedLog.standard("rejected connections"));
    }

    /** The rate-limited log of rejected connections and refused admin requests. */
    public RateLimitedLog rejectionLog() {
        return security.rejectionLog();
    }

    /** The brake on password guessing, for the client listener and the admin port. */
    public LoginBackoff loginBackoff() {
        return security.loginBackoff();
    }

    public Authenticator authenticator() {
        return authenticator;
    }

    public Authorizer authorizer() {
        return security.authorizer();
    }

    /** The connection limits and the counters of every refusal. */
    public ConnectionLimits limits() {
        return security.limits();
    }

    @Override
    protected void initChannel(SocketChannel ch) {
        channels.add(ch);
        int heartbeat = config.broker.heartbeatIntervalMs;
        if (byteCounter != null) {
            ch.pipeline().addLast(byteCounter);
        }
        if (sslContext != null) {
            ch.pipeline().addLast("tls", sslContext.newHandler(ch.alloc()));
        }
        ch.pipeline()
                .addLast(new FrameDecoder(PRE_HANDSHAKE_MAX_FRAME_BYTES))
                .addLast(new FrameEncoder(config.broker.maxFrameBytes));
        if (frameCounter != null) {
            ch.pipeline().addLast(frameCounter);
        }
        if (heartbeat > 0) {
            // reader side: Netty's handler (no cost per frame); writer side: WriterIdleTimer (no promise per write)
            ch.pipeline().addLast(new IdleStateHandler(2L * heartbeat, 0, 0, TimeUnit.MILLISECONDS))
                    .addLast(new WriterIdleTimer(heartbeat));
        }
        ch.pipeline().addLast(new HandshakeHandler(config, authenticator, queues, transactions, security));
    }
}
