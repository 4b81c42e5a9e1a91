package io.sluice.broker;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.ChannelGroupFuture;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.sluice.broker.admin.AdminServer;
import io.sluice.broker.auth.Authenticator;
import io.sluice.broker.cluster.ClusterNode;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.metrics.NetworkCounters;
import io.sluice.broker.net.BrokerChannelInitializer;
import io.sluice.broker.net.LastFrame;
import io.sluice.broker.net.StopReading;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueManager;
import io.sluice.broker.txn.TransactionCoordinator;
import io.sluice.broker.txn.TransactionLog;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.StorageFailedException;
import io.sluice.storage.durability.FileForcer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;

/**
 * A running broker: the store, the queues and the listener. {@link #start(BrokerConfig)} recovers the
 * store and binds; {@link #close()} shuts down gracefully within {@code broker.shutdown-timeout-ms}.
 *
 * <p>Threads: one acceptor thread, {@code availableProcessors} event-loop threads serving both
 * connections and queues (each queue is bound to one loop), and the storage flusher; during start-up,
 * {@code sluice-start} builds the admin server and the event loops, and {@code sluice-start-transactions} opens the
 * transaction log's store, while the queues' store recovers.
 */
public final class Broker implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Broker.class);

    private final BrokerConfig config;
    private final MessageStore store;
    private final EventLoopGroup acceptor;
    private final EventLoopGroup workers;
    private final QueueManager queues;
    private final TransactionCoordinator transactions;
    /** Null on a single broker (cluster.enabled false). */
    private final ClusterNode cluster;
    private final ChannelGroup channels = new DefaultChannelGroup("sluice-connections", GlobalEventExecutor.INSTANCE);
    private final Channel serverChannel;
    private volatile boolean closed;
    private final BrokerChannelInitializer channelInitializer;
    private final io.netty.util.concurrent.ScheduledFuture<?> diskGuardTask;
    private final io.netty.util.concurrent.ScheduledFuture<?> rateLimitedLogsTask;
    private String diskBlocked;
    private final AdminServer admin;
    private final NetworkCounters network;
    private final InetSocketAddress listenAddress;
    private final long recoveryNanos;

    private Broker(BrokerConfig config, FileForcer forcer, StartupPhases phases) {
        this.config = config;
        String dataDirectoryProblem = DataDirectoryAccess.problem(config.dataDirectory());
        if (dataDirectoryProblem != null) {
            throw new StartupException(dataDirectoryProblem);
        }
        phases.end("checking the data directory");
        // Rule "the listener's parts start while the store recovers": the admin server and the event loops
        // take nothing from the store, so a thread of their own builds them (loading their classes, the
        // native transport and the buffer allocator) while this one opens the store. The listener binds
        // only once the store is open, so no client is served before recovery has finished.
        CompletableFuture<ListenerParts> parts = onStartThread("sluice-start", () -> ListenerParts.start(config));
        // Rule "the transaction log opens while the queues' store recovers": a store of its own, which the queues'
        // store does not read, so its open (Chronicle's, and the check of its last segment) need not wait. Its
        // transactions are recovered into the queues below, once they exist, still before the listener binds.
        CompletableFuture<TransactionLog> transactionLog = onStartThread("sluice-start-transactions",
                () -> TransactionLog.open(config.dataDirectory(), config.storeConfig(), forcer));
        this.network = config.metrics.enabled ? new NetworkCounters() : null;
        long storeStarted = System.nanoTime();
        MessageStore opened;
        try {
            opened = MessageStore.open(config.dataDirectory(), config.storeConfig(), forcer);
        } catch (Exception e) {
            // Exception: Chronicle throws checked exceptions it does not declare; the store's failure is the start's.
            closeStarted(parts, ListenerParts::close, e);
            closeStarted(transactionLog, TransactionLog::close, e);
            throw new StartupException(describeStoreFailure(e), e);
        }
        this.store = opened;
        this.recoveryNanos = System.nanoTime() - storeStarted;
        phases.end("the store's recovery");
        ListenerParts started;
        try {
            started = parts.join();
            phases.end("waiting for the admin server and event loops");
        } catch (CompletionException e) {
            closeStarted(transactionLog, TransactionLog::close, e);
            store.close();
            throw e.getCause() instanceof StartupException startup ? startup
                    : new StartupException(String.valueOf(e.getCause().getMessage()), e.getCause());
        }
        this.admin = started.admin();
        boolean epoll = started.epoll();
        EventLoopGroup acceptorGroup = started.acceptor();
        EventLoopGroup workerGroup = started.workers();
        QueueManager queueManager = null;
        TransactionCoordinator transactionCoordinator = null;
        ClusterNode clusterNode = null;
        try {
            queueManager = new QueueManager(store, workerGroup, config.queues, config.broker.publishWindowMessages,
                    config.broker.publishWindowBytes, config.cluster.enabled ? QueueManager.Role.CLUSTER_NODE : QueueManager.Role.SINGLE_BROKER);
            queueManager.limitQueues(config.limits.maxQueues);
            phases.end("queues");
            // Before the listener binds: what a crash interrupted is rolled back or applied again first.
            TransactionLog openedLog = joinStarted(transactionLog);
            phases.end("waiting for the transaction log's open");
            transactionCoordinator = TransactionCoordinator.open(openedLog, queueManager, config.transactions);
            phases.end("the transactions' recovery");
            if (config.cluster.enabled) {
                // Before the listener binds, as recovery: the node's Raft log is replayed into the queues first.
                clusterNode = ClusterNode.start(config, queueManager, this::closeClientsNotLeader);
                phases.end("the cluster node");
            }
            Class<? extends ServerChannel> channelType = epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
            this.channelInitializer = new BrokerChannelInitializer(config, new Authenticator(config.auth), queueManager, transactionCoordinator,
                    channels, network);
            ServerBootstrap bootstrap = new ServerBootstrap()
                    .group(acceptorGroup, workerGroup)
                    .channel(channelType)
                    .option(ChannelOption.SO_BACKLOG, 1024)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    // A consumer that stops reading costs at most the high water mark of outbound buffer;
                    // past it the queue delivers nothing more to that connection until it drains.
                    .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(256 << 10, 1 << 20))
                    .childOption(ChannelOption.ALLOCATOR, PooledByteBufAllocator.DEFAULT)
                    .childHandler(channelInitializer);
            try {
                this.serverChannel = bootstrap.bind(new InetSocketAddress(config.broker.listenAddress, config.broker.port))
                        .syncUninterruptibly().channel();
                phases.end("binding");
            } catch (Exception e) {
                // Netty rethrows the bind's checked IOException (epoll: NativeIoException) undeclared, hence Exception.
                throw new StartupException(ListenFailure.describe(config.broker.listenAddress, config.broker.port,
                        "broker.listen-address", "broker.port", e), e);
            }
        } catch (Exception e) {
            started.close();
            if (clusterNode != null) {
                clusterNode.close();
            }
            if (transactionCoordinator != null) {
                transactionCoordinator.close();
            } else {
                closeStarted(transactionLog, TransactionLog::close, e);
            }
            if (queueManager != null) {
                queueManager.close();
            }
            store.close();
            throw e instanceof StartupException startup ? startup : new StartupException(String.valueOf(e.getMessage()), e);
        }
        this.acceptor = acceptorGroup;
        this.workers = workerGroup;
        this.queues = queueManager;
        this.transactions = transactionCoordinator;
        this.cluster = clusterNode;
        this.listenAddress = (InetSocketAddress) serverChannel.localAddress();
        diskGuardTask = workers.next().scheduleAtFixedRate(this::checkDisk, 1, 1, TimeUnit.SECONDS);
        // RateLimitedLog rule L1: the summary of a flood comes even when the flood has stopped.
        rateLimitedLogsTask = workers.next().scheduleAtFixedRate(() -> {
            channelInitializer.rejectionLog().flush();
            queues.messageLog().flush();
            queues.producerStateLog().flush();
            queues.publishPauseLog().flush();
        }, 1, 1, TimeUnit.SECONDS);
        if (admin != null) {
            admin.attach(this);
        }
        long startedMillis = phases.elapsedMillis();
        LOG.info("Sluice broker '{}' listening on {} ({} transport), data in {} ({} queues, durability {}), started in {} ms"
                        + " (the store's recovery {} ms); phases: {}.",
                config.broker.name, listenAddress, epoll ? "epoll" : "nio",
                config.dataDirectory().toAbsolutePath(), store.listQueues().size(), config.storeConfig().durability().configName(),
                startedMillis, recoveryNanos / 1_000_000, phases.describe());
    }

    /**
     * What the listener needs besides the store: the admin server (live, not ready, during recovery),
     * the acceptor and worker event loops and their transport. {@link #start} runs on the start-up
     * thread {@code sluice-start}.
     */
    private record ListenerParts(AdminServer admin, boolean epoll, EventLoopGroup acceptor, EventLoopGroup workers) {
        static ListenerParts start(BrokerConfig config) {
            AdminServer admin = config.metrics.enabled ? AdminServer.start(config) : null;
            EventLoopGroup acceptor = null;
            EventLoopGroup workers = null;
            try {
                boolean epoll = Epoll.isAvailable();
                IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
                acceptor = new MultiThreadIoEventLoopGroup(1, io);
                int ioThreads = config.broker.ioThreads > 0 ? config.broker.ioThreads : Runtime.getRuntime().availableProcessors();
                workers = new MultiThreadIoEventLoopGroup(ioThreads, io);
                PooledByteBufAllocator.DEFAULT.metric(); // the connections' allocator, set up now rather than at the first read
                return new ListenerParts(admin, epoll, acceptor, workers);
            } catch (RuntimeException | Error e) {
                shutdownGroups(acceptor, workers);
                if (admin != null) {
                    admin.close();
                }
                throw e;
            }
        }

        void close() {
            shutdownGroups(acceptor, workers);
            if (admin != null) {
                admin.close();
            }
        }
    }

    /** Runs {@code work} on a new daemon thread named {@code name}; its result or failure completes the future. */
    private static <T> CompletableFuture<T> onStartThread(String name, java.util.function.Supplier<T> work) {
        CompletableFuture<T> result = new CompletableFuture<>();
        Thread thread = new Thread(() -> {
            try {
                result.complete(work.get());
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
        }, name);
        thread.setDaemon(true);
        thread.start();
        return result;
    }

    /** What a start-up thread made, or its failure as it was thrown there (not wrapped). */
    private static <T> T joinStarted(CompletableFuture<T> starting) {
        try {
            return starting.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException failure) {
                throw failure;
            }
            if (e.getCause() instanceof Error failure) {
                throw failure;
            }
            throw e;
        }
    }

    /**
     * After {@code failure} of the start: waits for what a start-up thread is making and closes it, or adds its own
     * failure to {@code failure}'s suppressed ones. Closing twice is harmless for what it is used on.
     */
    private static <T> void closeStarted(CompletableFuture<T> starting, java.util.function.Consumer<T> close, Exception failure) {
        try {
            close.accept(starting.join());
        } catch (CompletionException alsoFailed) {
            if (alsoFailed.getCause() != failure) {
                failure.addSuppressed(alsoFailed.getCause());
            }
        }
    }

    /** The store's own message, with the operating system's reason it carries as its cause. */
    private static String describeStoreFailure(Exception e) {
        String message = String.valueOf(e.getMessage());
        Throwable cause = e.getCause();
        if (cause != null && cause.getMessage() != null && !message.contains(cause.getMessage())) {
            message += ": " + cause.getMessage();
        }
        return message;
    }

    public static Broker start(BrokerConfig config) {
        return new Broker(config, FileForcer.FSYNC, new StartupPhases(System.nanoTime()));
    }

    /**
     * As {@link #start(BrokerConfig)}, for a broker whose start began at {@code startedNanos}
     * ({@code System.nanoTime()}; the command line's own start, reading the configuration included):
     * the "started in" it logs counts from then.
     */
    public static Broker start(BrokerConfig config, long startedNanos) {
        return new Broker(config, FileForcer.FSYNC, new StartupPhases(startedNanos));
    }

    /** As {@link #start(BrokerConfig, long)}, continuing the phases the command line began (its "started in" line lists them). */
    static Broker start(BrokerConfig config, StartupPhases phases) {
        return new Broker(config, FileForcer.FSYNC, phases);
    }

    /** As {@link #start(BrokerConfig)}, with the store forcing files through {@code forcer}: tests inject disk failures. */
    static Broker start(BrokerConfig config, FileForcer forcer) {
        return new Broker(config, forcer, new StartupPhases(System.nanoTime()));
    }

    /**
     * The broker-wide disk guard: below the reserved free space every producer is blocked, with the
     * reason; they resume once free space is back above the reserve by a margin of 10 % (hysteresis).
     */
    private void checkDisk() {
        try {
            long reserve = config.storeConfig().reservedDiskBytes();
            long headroom = store.diskGuard().refresh();
            String reason = null;
            if (headroom < 0 || (diskBlocked != null && headroom < reserve / 10)) {
                reason = "free disk space " + store.diskGuard().freeBytes() + " bytes is below the reserve of "
                        + reserve + " bytes (storage.reserved-disk-bytes)";
            }
            if ((reason == null) != (diskBlocked == null)) {
                diskBlocked = reason;
                LOG.warn(reason != null ? "Disk guard: blocking every producer: {}." : "Disk guard: free space is back; producers resume.{}",
                        reason != null ? reason : "");
                queues.diskBlocked(reason);
            }
        } catch (RuntimeException e) {
            LOG.warn("Disk guard check failed.", e);
        }
    }

    /**
     * A cluster node that is not (or no longer) the leader sends its clients to the leader: CLOSE
     * NOT_LEADER naming it (docs/protocol.md, "Clusters"), written before each connection closes. Each connection
     * closes on its own ({@link LastFrame}): one client that does not read kept every client of a deposed node
     * connected when they closed together once every write had completed.
     */
    private void closeClientsNotLeader(String reason) {
        CloseFrame close = new CloseFrame(ErrorCode.NOT_LEADER, reason);
        for (Channel channel : channels) {
            LastFrame.writeAndClose(channel, close);
        }
    }

    /** This broker as a cluster node, or null on a single broker. */
    public ClusterNode cluster() {
        return cluster;
    }

    /** The limits against hostile clients, with their refusal counters. */
    public io.sluice.broker.security.ConnectionLimits limits() {
        return channelInitializer.limits();
    }

    /** The rate-limited log of rejected connections and refused admin requests. */
    public io.sluice.broker.log.RateLimitedLog rejectionLog() {
        return channelInitializer.rejectionLog();
    }

    /** The brake on password guessing, with its refusal counters per listener. */
    public io.sluice.broker.security.LoginBackoff loginBackoff() {
        return channelInitializer.loginBackoff();
    }

    /** The permission checks, with their denial counter. */
    public io.sluice.broker.auth.Authorizer authorizer() {
        return channelInitializer.authorizer();
    }

    /** The port actually bound (useful when the configuration says 0). */
    public int port() {
        return listenAddress.getPort();
    }

    /** The address and port the client listener was bound to. */
    public InetSocketAddress listenAddress() {
        return listenAddress;
    }

    /**
     * True while the client listener accepts connections, and during {@link #close()}: a broker whose
     * listener channel closed under it is not alive for {@code /health/live}.
     */
    public boolean isListening() {
        return closed || serverChannel.isActive();
    }

    /** The listener's channel, for tests that take the listener away under a running broker. */
    Channel listenerChannel() {
        return serverChannel;
    }

    public QueueManager queues() {
        return queues;
    }

    public TransactionCoordinator transactions() {
        return transactions;
    }

    public MessageStore store() {
        return store;
    }

    public BrokerConfig config() {
        return config;
    }

    /** Open client connections. */
    public ChannelGroup connections() {
        return channels;
    }

    /** Traffic counters, or null with metrics disabled. */
    public NetworkCounters networkCounters() {
        return network;
    }

    /** How long opening (and recovering) the store took. */
    public long recoveryNanos() {
        return recoveryNanos;
    }

    /** True from the end of start-up until {@link #close()} begins, while the client listener is up. */
    public boolean isReady() {
        return !closed && serverChannel.isActive();
    }

    /** Queues whose storage failed (they refuse publishes until a restart), with why; empty if none. */
    public Map<String, String> failedQueues() {
        Map<String, String> failed = new TreeMap<>();
        for (BrokerQueue q : queues.all()) {
            StorageFailedException e = q.store().failure();
            if (e != null) {
                failed.put(q.name(), e.getMessage());
            }
        }
        return failed;
    }

    /** The metrics port actually bound, or -1 with {@code metrics.enabled} false. */
    public int metricsPort() {
        return admin == null ? -1 : admin.port();
    }

    private void closeAdmin() {
        if (admin != null) {
            admin.close();
        }
    }

    /**
     * Graceful shutdown: a cluster leader hands its leadership over first ({@link ClusterNode#handOverLeadershipBeforeStop});
     * then stop accepting, give publishes waiting for their sync time to be confirmed
     * (up to {@code broker.shutdown-timeout-ms}), refuse those still waiting with NOT_CONFIRMED_SHUTDOWN,
     * tell clients, then force and close the store.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (cluster != null) {
            // A leader stopping hands its leadership over first: its clients reconnect to a leader, not to an election.
            cluster.handOverLeadershipBeforeStop(Math.min(config.broker.shutdownTimeoutMs, 2L * config.cluster.electionTimeoutMaxMs));
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(config.broker.shutdownTimeoutMs);
        LOG.info("Shutting down: no longer accepting connections, nor reading from the open ones.");
        // Rule H3 (InboundGate): what the clients send from now on is not read; they send it again after reconnecting.
        // The publishes already read are then all the shutdown waits for, however fast a client sends.
        // On each connection's loop, and done before the listener closes: a client that sees the listener gone and sends
        // more is not read. Fired from this thread, the event only queued a task, and the loop could read a frame that
        // arrived meanwhile before it ran (GracefulShutdownTest saw such a publish stored). Each loop is waited for up to
        // the shutdown's own deadline: a loop the machine starves may run the task late, and the listener closed after a
        // shorter bound of its own (1 s) let a client send into a connection still read. A loop that does not run it by
        // the deadline (a task stuck on it) is not waited for longer; what it reads late is a publish like those read
        // before the stop, confirmed or refused with NOT_CONFIRMED_SHUTDOWN, and a resend after the restart is stored once.
        List<io.netty.util.concurrent.Future<?>> stoppedReading = new ArrayList<>();
        channels.forEach(ch -> stoppedReading.add(ch.eventLoop().submit(() -> {
            ch.pipeline().fireUserEventTriggered(StopReading.INSTANCE);
        })));
        for (io.netty.util.concurrent.Future<?> f : stoppedReading) {
            f.awaitUninterruptibly(Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())), TimeUnit.MILLISECONDS);
        }
        serverChannel.close().awaitUninterruptibly(1, TimeUnit.SECONDS);
        diskGuardTask.cancel(false);
        rateLimitedLogsTask.cancel(false);
        awaitPendingConfirms(deadline);
        List<io.netty.util.concurrent.Future<?>> refused = new ArrayList<>();
        for (BrokerQueue q : queues.all()) {
            q.refuseUnconfirmedAtShutdown();
            refused.add(q.executor().submit(() -> null)); // the refusals written before the CLOSE
        }
        long refusalsDeadline = Math.max(deadline, System.nanoTime() + TimeUnit.SECONDS.toNanos(1));
        for (io.netty.util.concurrent.Future<?> f : refused) {
            f.awaitUninterruptibly(Math.max(0, TimeUnit.NANOSECONDS.toMillis(refusalsDeadline - System.nanoTime())), TimeUnit.MILLISECONDS);
        }
        checkpointProducers(deadline);
        // Rule L2 of LastFrame: each connection is half-closed after its CLOSE and closes once its client closes, or a grace
        // after. Waited for that long, so that the event loops' stop below closes none whose CLOSE may still be on its way:
        // a close with input unread (a client's publish this stop did not read) resets the connection, and the reset drops
        // what still waits in the send queue, the CLOSE and the NOT_CONFIRMED_SHUTDOWN refusals before it.
        ChannelGroupFuture connectionsClosed = channels.newCloseFuture();
        CloseFrame shuttingDown = new CloseFrame(ErrorCode.NONE, "the broker is shutting down");
        channels.forEach(ch -> LastFrame.writeAndClose(ch, shuttingDown));
        connectionsClosed.awaitUninterruptibly(LastFrame.GRACE_MS + 1_000, TimeUnit.MILLISECONDS);
        transactions.drain(1000);
        if (cluster != null) {
            cluster.close(); // before the event loops stop: the shard applies through the queues' executors
        }
        shutdownGroups(acceptor, workers);
        transactions.close();
        queues.close();
        store.close();
        closeAdmin();
        LOG.info("Shut down cleanly.");
    }

    /**
     * Gives publishes waiting for their sync time until {@code deadline} to be confirmed: asks every queue at once how
     * many wait, again while any has some, each answer awaited no later than the deadline, so one queue whose executor
     * does not answer holds the others' confirms back no more than the timeout says.
     */
    private void awaitPendingConfirms(long deadline) {
        List<BrokerQueue> waiting = new ArrayList<>(queues.all());
        while (!waiting.isEmpty() && System.nanoTime() < deadline) {
            List<io.netty.util.concurrent.Future<Integer>> counts = new ArrayList<>(waiting.size());
            for (BrokerQueue q : waiting) {
                counts.add(q.executor().submit(q::pendingConfirms));
            }
            List<BrokerQueue> still = new ArrayList<>();
            for (int i = 0; i < counts.size(); i++) {
                io.netty.util.concurrent.Future<Integer> count = counts.get(i);
                boolean answered = count.awaitUninterruptibly(Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())),
                        TimeUnit.MILLISECONDS);
                if (!answered || !count.isSuccess() || count.getNow() > 0) {
                    still.add(waiting.get(i));
                }
            }
            waiting = still;
            if (!waiting.isEmpty()) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
            }
        }
        if (!waiting.isEmpty()) {
            LOG.info("Shutting down with publishes still unconfirmed in {} queue(s) after broker.shutdown-timeout-ms; they are "
                    + "refused with NOT_CONFIRMED_SHUTDOWN and their producers resend them after the restart.", waiting.size());
        }
    }

    /** Last producer checkpoints of the queues that changed since theirs, so the next start replays nothing; within the deadline. */
    private void checkpointProducers(long deadline) {
        CompletableFuture<?>[] checkpoints = queues.all().stream().map(q -> q.producerState().checkpoint())
                .toArray(CompletableFuture[]::new);
        try {
            // At least a second of its own: the wait for pending confirms before may have used the whole deadline.
            CompletableFuture.allOf(checkpoints).get(Math.max(TimeUnit.SECONDS.toNanos(1), deadline - System.nanoTime()),
                    TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            LOG.warn("Shutting down without every queue's last producer checkpoint ({}): the next start replays their "
                    + "records since the checkpoint before.", e.toString());
        }
    }

    private static void shutdownGroups(EventLoopGroup... groups) {
        for (EventLoopGroup group : groups) {
            if (group != null) {
                group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
            }
        }
    }
}
