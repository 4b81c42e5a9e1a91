package io.sluice.client;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.sluice.client.internal.Backoff;
import io.sluice.client.internal.BrokerAddresses;
import io.sluice.client.internal.ClientTls;
import io.sluice.client.internal.OwingTask;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FrameDecoder;
import io.sluice.protocol.FrameEncoder;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.ProtocolVersion;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * How one {@link Connection} reaches a broker, at first and again after a loss: where each attempt goes (one broker,
 * or a cluster's nodes and the leader a NOT_LEADER names: {@link BrokerAddresses}), the network connection each
 * attempt opens (TCP or TLS, ending in a {@link ConnectionInbound}) and the HELLO it sends, and the reconnect after a
 * loss, backed off by the {@link ReconnectPolicy} but at once towards a newly named leader. What a handshake
 * completes and a loss fails is the connection's own ({@link Connection#onHelloOk}, {@link Connection#onChannelInactive}).
 *
 * <p>Threads: the connection's network thread, with two exceptions: {@link #address} is volatile and read anywhere,
 * and {@link #connectFirst} runs on the thread of {@link Connection#connect}, which moves the addresses and backs off
 * only between its attempts, while none runs on the network thread.
 */
final class ConnectionAttempts {
    /** The connection's logger: applications filter the client's connection lines on it. */
    private static final Logger LOG = LoggerFactory.getLogger(Connection.class);

    private final Connection connection;
    private final ConnectionOptions options;
    private final EventLoop loop;
    /** Where the next attempt goes: one broker, or a cluster's nodes and the leader last named. */
    private final BrokerAddresses addresses;
    /** The broker of the current (or last) attempt, host:port, for messages. */
    private volatile String address;
    private final Bootstrap bootstrap;
    private final Backoff backoff;
    /** Null for plaintext. */
    private final ClientTls tls;
    /** The broker closed with NOT_LEADER, so {@link #addresses} moved on already; null if not. */
    private Boolean closedNotLeaderNamingNewLeader;

    ConnectionAttempts(Connection connection, ConnectionOptions options, EventLoop loop, BrokerAddresses addresses,
                       ClientTls tls, boolean epoll) {
        this.connection = connection;
        this.options = options;
        this.loop = loop;
        this.addresses = addresses;
        this.address = addresses.current().toString();
        this.tls = tls;
        ReconnectPolicy policy = options.reconnectPolicy();
        this.backoff = new Backoff(policy.initialDelay().toMillis(), policy.maxDelay().toMillis(),
                policy.multiplier(), policy.jitter(), () -> ThreadLocalRandom.current().nextDouble());
        this.bootstrap = new Bootstrap().group(loop).channel(epoll ? EpollSocketChannel.class : NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE,
                        options.connectTimeout().toMillis()));
    }

    /** The broker's host:port, for messages. */
    String address() {
        return address;
    }

    /**
     * {@link Connection#connect}'s attempts: returns once one completed the handshake. The first failure is thrown,
     * but on a cluster, where a node that is not the leader names it and a node that cannot be reached is skipped,
     * once per address in the list, until the connect timeout.
     */
    void connectFirst() throws InterruptedException {
        long deadline = System.nanoTime() + options.connectTimeout().toNanos();
        for (int unreachable = 0; ; ) {
            CompletableFuture<Void> handshake = new CompletableFuture<>();
            loop.execute(() -> attemptOnLoop(handshake));
            try {
                Connection.await(handshake, options.connectTimeout().plusSeconds(1), "connect to " + address);
                return;
            } catch (SluiceException e) {
                // A cluster: a node that is not the leader names it; a node that cannot be reached is skipped,
                // once per address in the list. A single broker's first failure is thrown, as always.
                boolean notLeader = e.errorCode() == ErrorCode.NOT_LEADER;
                boolean skip = e instanceof ConnectionLostException && ++unreachable < addresses.size();
                if (!(notLeader || skip) || System.nanoTime() - deadline > 0) {
                    throw e;
                }
                if (!addresses.moveOn(notLeader ? e.brokerMessage() : null) && notLeader) {
                    // An election runs: the caller's thread, blocked in this connect anyway, backs off before
                    // asking again, never past the connect timeout.
                    long leftMillis = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                    Thread.sleep(Math.max(0, Math.min(backoff.nextDelayMillis(), leftMillis)));
                }
                address = addresses.current().toString();
            }
        }
    }

    /**
     * On loop: one attempt ({@link #connectOnce}); what it throws fails {@code handshake} with the exception, so that
     * {@link Connection#connect} throws it at once and a reconnect is followed by the next. Left to Netty, it would be
     * logged, connect would wait out its timeout, and the client would stop reconnecting without a word.
     */
    private void attemptOnLoop(CompletableFuture<Void> handshake) {
        OwingTask.run(LOG, "connecting to " + address, "the attempt fails with the exception",
                handshake::completeExceptionally, () -> connectOnce(handshake));
    }

    /** On loop: opens a network connection to the current address and sends HELLO; {@code handshake} tells the outcome. */
    private void connectOnce(CompletableFuture<Void> handshake) {
        if (connection.isClosed()) {
            handshake.completeExceptionally(connection.closedException());
            return;
        }
        FrameDecoder decoder = new FrameDecoder(Connection.HANDSHAKE_MAX_FRAME_BYTES);
        FrameEncoder encoder = new FrameEncoder(Connection.HANDSHAKE_MAX_FRAME_BYTES);
        BrokerAddresses.Address target = addresses.current();
        address = target.toString();
        ChannelFuture connect = bootstrap.clone().handler(new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel ch) {
                if (tls != null) {
                    ch.pipeline().addLast("tls", tls.newHandler(ch.alloc(), target.host(), target.port()));
                }
                ch.pipeline().addLast("decoder", decoder).addLast("encoder", encoder)
                        .addLast("handler", new ConnectionInbound(connection, handshake, decoder, encoder));
            }
        }).connect(target.host(), target.port());
        // A listener's exception goes to Netty's log (a HELLO that cannot be built, say: a user name longer than it
        // carries), and a timer's too: each fails the handshake and closes the network connection instead.
        connect.addListener(result -> OwingTask.run(LOG, "sending HELLO to " + address,
                "the attempt fails with the exception", failure -> failAttempt(handshake, connect.channel(), failure), () -> {
                    if (!result.isSuccess()) {
                        handshake.completeExceptionally(new ConnectionLostException(
                                "could not connect to " + address + ": " + result.cause().getMessage(), result.cause()));
                        return;
                    }
                    Channel ch = connect.channel();
                    ch.writeAndFlush(new HelloFrame(ProtocolVersion.MIN, ProtocolVersion.CURRENT, options.clientName(),
                            options.maxFrameBytes(), (int) options.heartbeat().toMillis(), options.user(),
                            options.password(), HelloFrame.KNOWN_CAPABILITIES));
                    long timeoutMs = options.connectTimeout().toMillis();
                    loop.schedule(new OwingTask(LOG, "the handshake timer of " + address, "the attempt fails with the exception",
                            failure -> failAttempt(handshake, ch, failure), () -> {
                                if (handshake.completeExceptionally(new SluiceTimeoutException(
                                        "no HELLO_OK from " + address + " within " + timeoutMs + " ms"))) {
                                    ch.close();
                                }
                            }), timeoutMs, TimeUnit.MILLISECONDS);
                }));
    }

    /** On loop: the attempt on {@code ch} failed with {@code failure}, thrown by the client's own work. */
    private static void failAttempt(CompletableFuture<Void> handshake, Channel ch, Throwable failure) {
        handshake.completeExceptionally(failure);
        if (ch != null) {
            ch.close();
        }
    }

    /** On loop: a handshake completed; the next loss backs off from the start. */
    void handshaken() {
        backoff.reset();
    }

    /** On loop: the broker closed the connection with NOT_LEADER and {@code reason}; the reconnect goes where it says. */
    void closedNotLeader(String reason) {
        closedNotLeaderNamingNewLeader = addresses.moveOn(reason);
    }

    /** On loop: the connection was lost and is to be made again: to the leader a CLOSE named, else the next node. */
    void reconnectAfterLoss() {
        boolean newLeader = closedNotLeaderNamingNewLeader != null && closedNotLeaderNamingNewLeader;
        if (closedNotLeaderNamingNewLeader == null) {
            addresses.moveOn(null); // a cluster node that went away: try the next one
        }
        closedNotLeaderNamingNewLeader = null;
        scheduleReconnect(newLeader);
    }

    /**
     * {@code newLeader}: a NOT_LEADER just named a leader not named before, tried at once: a cluster node names
     * a leader only once it has heard from it (docs/replication.md, rule S2), and every delay here is write
     * unavailability after a failover.
     */
    private void scheduleReconnect(boolean newLeader) {
        if (connection.isClosed() || !options.reconnectPolicy().enabled()) {
            return;
        }
        long delayMs = newLeader ? 0 : backoff.nextDelayMillis();
        LOG.info("Reconnecting to {} in {} ms.", addresses.current(), delayMs);
        loop.schedule(() -> {
            CompletableFuture<Void> handshake = new CompletableFuture<>();
            handshake.whenComplete((ignored, failure) -> {
                if (failure != null) {
                    LOG.warn("Reconnecting to {} failed: {}", address, failure.getMessage());
                    boolean named = addresses.moveOn(failure instanceof SluiceException refused
                            && refused.errorCode() == ErrorCode.NOT_LEADER ? refused.brokerMessage() : null);
                    connection.executeOnLoop(() -> scheduleReconnect(named));
                }
            });
            attemptOnLoop(handshake); // what it throws fails the handshake, which schedules the next attempt
        }, delayMs, TimeUnit.MILLISECONDS);
    }
}
