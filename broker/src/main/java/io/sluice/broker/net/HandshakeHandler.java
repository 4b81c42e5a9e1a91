package io.sluice.broker.net;

import io.sluice.broker.log.Printable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.broker.auth.Authenticator;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.queue.QueueManager;
import io.sluice.broker.txn.TransactionCoordinator;
import io.sluice.broker.security.LoginBackoff;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.Frame;
import io.sluice.protocol.FrameDecoder;
import io.sluice.protocol.FrameEncoder;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.HelloOkFrame;
import io.sluice.protocol.ProtocolVersion;

import javax.naming.InvalidNameException;
import javax.naming.ldap.LdapName;
import javax.naming.ldap.Rdn;
import javax.net.ssl.SSLPeerUnverifiedException;
import java.net.SocketAddress;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A connection until its HELLO is answered: the connection limit, the handshake timeout, the
 * protocol version, authentication (behind the per-address {@link LoginBackoff}) and the per-user
 * limit, then HELLO_OK with the negotiated frame size. It then puts a {@link ClientSessionAdapter} in
 * its place and leaves the pipeline, so that the frames of an open connection never pass a check
 * of the handshake again. Runs on the connection's event loop.
 *
 * <p>Counts: the connection is counted in {@code limits.max-connections} from the start, and the
 * user in {@code limits.max-connections-per-user} from HELLO_OK; whichever handler is in the
 * pipeline when the connection closes gives the counts back.
 */
final class HandshakeHandler extends ProtocolHandler {
    /** How often a HELLO waiting for a cluster's leader looks again (rule S2 of docs/replication.md). */
    private static final long LEADER_RECHECK_MS = 20;
    /** Above storage.max-message-bytes in the frame size granted: a dead-letter copy's headers and a DELIVER's fields. */
    static final int MESSAGE_FRAME_HEADROOM_BYTES = 2048;
    /**
     * Where HELLO passwords are hashed: off the event loops, at most half the cores at once (the rest keep serving).
     * Each open connection has at most one check waiting (it reads nothing meanwhile); one whose connection closed
     * before its turn costs no hash (PasswordCheckAfterHangUpTest).
     */
    private static final ThreadPoolExecutor PASSWORD_CHECKS = passwordChecks();

    private final BrokerConfig config;
    private final Authenticator authenticator;
    private final QueueManager queues;
    private final TransactionCoordinator transactions;
    private boolean countedConnection;
    private ScheduledFuture<?> handshakeTimeout;
    private long activeAtNanos = System.nanoTime();
    /** Frames that came behind a HELLO waiting for a cluster's leader (rule S2); null while none waits. */
    private List<Object> waitingForLeader;

    HandshakeHandler(BrokerConfig config, Authenticator authenticator, QueueManager queues, TransactionCoordinator transactions,
                     ConnectionSecurity security) {
        super(security);
        this.transactions = transactions;
        this.config = config;
        this.authenticator = authenticator;
        this.queues = queues;
    }

    private static ThreadPoolExecutor passwordChecks() {
        int threads = Math.max(1, Runtime.getRuntime().availableProcessors() / 2);
        ThreadPoolExecutor pool = new ThreadPoolExecutor(threads, threads, 10, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), task -> {
            Thread thread = new Thread(task, "sluice-password-check");
            thread.setDaemon(true);
            return thread;
        });
        pool.allowCoreThreadTimeOut(true); // no thread while nobody logs in with a password
        return pool;
    }

    @Override
    String clientName() {
        return "?";
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        String refused = security.limits().openConnection();
        if (refused != null) {
            security.rejectionLog().warn(LOG, "Refusing a connection from {}: {}.", ctx.channel().remoteAddress(), refused);
            fail(ctx, ErrorCode.RESOURCE_LIMIT, refused);
            ctx.fireChannelActive();
            return;
        }
        countedConnection = true;
        activeAtNanos = System.nanoTime();
        handshakeTimeout = ctx.executor().schedule(() -> {
            security.limits().countHandshakeTimeout();
            fail(ctx, ErrorCode.HANDSHAKE_REQUIRED, "no HELLO within broker.handshake-timeout-ms " + config.broker.handshakeTimeoutMs + " ms");
        }, config.broker.handshakeTimeoutMs, TimeUnit.MILLISECONDS);
        ctx.fireChannelActive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        try {
            if (!countedConnection) {
                return; // refused at open: the CLOSE is on its way
            }
            if (waitingForLeader != null) {
                // A client that pipelines frames behind its HELLO: they go to the session once it is admitted.
                waitingForLeader.add(ReferenceCountUtil.retain(msg));
            } else if (msg instanceof HelloFrame hello) {
                handshake(ctx, hello);
            } else {
                fail(ctx, ErrorCode.HANDSHAKE_REQUIRED, "the first frame must be HELLO, got " + ((Frame) msg).type());
            }
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    private void handshake(ChannelHandlerContext ctx, HelloFrame hello) {
        if (hello.maxVersion() < ProtocolVersion.CURRENT || hello.minVersion() > ProtocolVersion.CURRENT) {
            fail(ctx, ErrorCode.UNSUPPORTED_VERSION, "client speaks versions " + hello.minVersion() + ".." + hello.maxVersion()
                    + ", the broker speaks " + ProtocolVersion.CURRENT);
            return;
        }
        SocketAddress remote = ctx.channel().remoteAddress();
        String certificateUser = certificateUser(ctx);
        if (hello.user().isEmpty()) {
            authenticated(ctx, hello, check(remote, hello, certificateUser)); // no password: nothing to hash
            return;
        }
        // A password costs a PBKDF2 hash (100-200 ms of CPU): checked off the event loop, which serves other connections
        // and queues meanwhile. What the client sent behind its HELLO waits, and reading pauses, until it is done; the
        // frames already read are decoded with the limit they will be handled under once admitted.
        holdFollowingFrames(ctx);
        ctx.pipeline().get(FrameDecoder.class).maxFrameBytes(config.broker.maxFrameBytes);
        // A check whose connection closed while it waited (the peer hung up, the handshake timed out) is not made: its
        // hash would only delay the logins behind it, and the queue is not bounded by the connections still open.
        CompletableFuture.supplyAsync(() -> ctx.channel().isActive() ? check(remote, hello, certificateUser) : null, PASSWORD_CHECKS)
                .whenComplete((auth, failure) -> ctx.executor().execute(() -> {
                    if (!ctx.channel().isActive() || (failure == null && auth == null)) {
                        return; // closed meanwhile (handshake timeout, peer gone): channelInactive released what was held
                    }
                    if (failure != null) {
                        exceptionCaught(ctx, failure);
                    } else {
                        authenticated(ctx, hello, auth);
                    }
                }));
    }

    /** The per-address brake on guessing (LoginBackoff), which may refuse before the credentials are checked, then the check. */
    private Authenticator.Result check(SocketAddress remote, HelloFrame hello, String certificateUser) {
        return security.loginBackoff().authenticate(remote, LoginBackoff.Listener.CLIENT,
                () -> authenticator.authenticate(hello.user(), hello.password(), certificateUser, security.anonymousAllowed())).result();
    }

    /** Frames read behind the HELLO wait in {@link #waitingForLeader}, and reading pauses, until the HELLO is answered. */
    private void holdFollowingFrames(ChannelHandlerContext ctx) {
        if (waitingForLeader == null) {
            waitingForLeader = new ArrayList<>();
            ctx.channel().config().setAutoRead(false); // what it pipelines stays in the socket meanwhile
        }
    }

    /** On the loop, with the outcome of {@link #check}. */
    private void authenticated(ChannelHandlerContext ctx, HelloFrame hello, Authenticator.Result auth) {
        if (!auth.accepted()) {
            if (waitingForLeader != null) { // the connection is refused: nothing it sent behind the HELLO will be handled
                waitingForLeader.forEach(ReferenceCountUtil::release);
                waitingForLeader.clear();
            }
            String rejected = auth.rejected();
            security.rejectionLog().warn(LOG, "Authentication failed for a connection from {}: {}.", ctx.channel().remoteAddress(), rejected);
            // Every refusal is answered after a delay, scheduled: the event loop never waits.
            ctx.executor().schedule(() -> fail(ctx, ErrorCode.AUTHENTICATION_FAILED, "authentication failed: " + rejected),
                    LoginBackoff.REFUSAL_DELAY_MS, TimeUnit.MILLISECONDS);
            return;
        }
        if (queues.replication() == null) {
            admit(ctx, hello, auth);
        } else {
            long waitMs = Math.min(queues.replication().leaderWaitMillis(),
                    config.broker.handshakeTimeoutMs - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - activeAtNanos) - LEADER_RECHECK_MS);
            long askedAtNanos = System.nanoTime();
            admitOnceLeader(ctx, hello, auth, askedAtNanos, askedAtNanos + TimeUnit.MILLISECONDS.toNanos(Math.max(0, waitMs)));
        }
    }

    /**
     * A cluster node serves clients only while it is the leader: a follower names the leader (docs/protocol.md,
     * "Clusters"). While no node known to be alive can be named (an election runs, the leader has not been heard
     * from since the HELLO came, or this node was just elected and is applying the log), the HELLO waits, checked
     * every {@link #LEADER_RECHECK_MS}, until {@code deadlineNanos} (rule S2 of docs/replication.md): the client
     * learns the new leader the moment this node does, instead of trying a dead one and polling with a back-off
     * that has grown during the election.
     */
    private void admitOnceLeader(ChannelHandlerContext ctx, HelloFrame hello, Authenticator.Result auth, long askedAtNanos,
                                 long deadlineNanos) {
        if (!ctx.channel().isActive()) {
            return;
        }
        String notLeader = queues.replication().notLeader();
        if (notLeader == null) {
            admit(ctx, hello, auth);
        } else if (queues.replication().awaitingLeader(askedAtNanos) && System.nanoTime() - deadlineNanos < 0) {
            holdFollowingFrames(ctx);
            ctx.executor().schedule(() -> admitOnceLeader(ctx, hello, auth, askedAtNanos, deadlineNanos), LEADER_RECHECK_MS,
                    TimeUnit.MILLISECONDS);
        } else {
            fail(ctx, ErrorCode.NOT_LEADER, notLeader);
        }
    }

    private void admit(ChannelHandlerContext ctx, HelloFrame hello, Authenticator.Result auth) {
        String refused = security.limits().openUserConnection(auth.user());
        if (refused != null) {
            security.rejectionLog().warn(LOG, "Refusing a connection from {}: {}.", ctx.channel().remoteAddress(), refused);
            fail(ctx, ErrorCode.RESOURCE_LIMIT, refused);
            return;
        }
        handshakeTimeout.cancel(false);
        // HELLO's maxFrameBytes 0 means "the broker's default" (see HelloFrame), not the 1024-byte floor.
        // Never below what the largest message needs (storage.max-message-bytes, plus a dead-letter copy's added headers
        // and the DELIVER frame's own fields): a DELIVER is never split, and one over the grant cannot be sent at all.
        int wanted = hello.maxFrameBytes() == 0 ? config.broker.maxFrameBytes
                : Math.max(hello.maxFrameBytes(), config.storage.maxMessageBytes + MESSAGE_FRAME_HEADROOM_BYTES);
        int maxFrame = Math.min(config.broker.maxFrameBytes, wanted);
        ctx.pipeline().get(FrameDecoder.class).maxFrameBytes(config.broker.maxFrameBytes);
        ctx.pipeline().get(FrameEncoder.class).maxFrameBytes(maxFrame);
        int granted = hello.capabilities() & served();
        ctx.writeAndFlush(new HelloOkFrame(ProtocolVersion.CURRENT, maxFrame, config.broker.heartbeatIntervalMs,
                config.broker.name, config.broker.publishWindowMessages, config.broker.publishWindowBytes, granted));
        // Frames the decoder still holds from this read go to the session adapter: the replace is
        // done before this call returns.
        countedConnection = false; // the session adapter owns both counts from here on
        ctx.pipeline().replace(this, "connection", new ClientSessionAdapter(config, queues, transactions, security, hello.clientName(),
                auth.user(), maxFrame, granted));
        LOG.debug("Connection from {} opened by client '{}' (user '{}').", ctx.channel().remoteAddress(),
                Printable.escape(hello.clientName()), Printable.escape(auth.user()));
        if (waitingForLeader != null) {
            List<Object> held = waitingForLeader;
            waitingForLeader = null;
            // Reading resumes before the held frames are handled, not after: one of them may pause it again (a PUBLISH
            // past the window, a DECLARE the declare thread serves), and that pause must hold. The socket is read only
            // once this task returns, so they still come before whatever the client sent after them.
            ctx.channel().config().setAutoRead(true);
            for (Object frame : held) {
                ctx.fireChannelRead(frame); // this context still leads to the session adapter put in its place
            }
        }
    }

    /**
     * The capabilities this listener serves, of which HELLO_OK grants those the client asked for (docs/protocol.md,
     * "Capabilities"): a publish window whose bytes count headers, always; transactions, unless the listener has none or this is a cluster node whose entry level is below
     * the one replicated transactions need (rule R13 of docs/replication.md), which refuses TX_BEGIN (NOT_REPLICATED).
     * A client that did not ask may still send TX frames: version 1 clients before the capability bit did, and are
     * served as before.
     */
    private int served() {
        int transactionsServed = transactions != null
                && (queues.replication() == null || queues.replication().transactionsRefused() == null)
                ? HelloFrame.CAPABILITY_TRANSACTIONS : 0;
        return transactionsServed | HelloFrame.CAPABILITY_WINDOW_COUNTS_HEADERS;
    }

    /** The subject CN of a verified TLS client certificate, or null (no TLS, no certificate, or no CN). */
    private static String certificateUser(ChannelHandlerContext ctx) {
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

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (waitingForLeader != null) {
            waitingForLeader.forEach(ReferenceCountUtil::release);
            waitingForLeader = null;
        }
        if (countedConnection) {
            countedConnection = false;
            security.limits().closeConnection();
        }
        if (handshakeTimeout != null) {
            handshakeTimeout.cancel(false);
        }
        ctx.fireChannelInactive();
    }
}
