package io.sluice.client;

import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.client.internal.BrokerAddresses;
import io.sluice.client.internal.ClientTls;
import io.sluice.client.internal.NetworkThreads;
import io.sluice.client.internal.OutgoingHeaders;
import io.sluice.client.internal.OwingTask;
import io.sluice.client.internal.SerialExecutor;
import io.sluice.client.internal.WriterIdleTimer;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.DeleteQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FlowFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.FrameDecoder;
import io.sluice.protocol.FrameEncoder;
import io.sluice.protocol.HelloOkFrame;
import io.sluice.protocol.PurgeQueueFrame;
import io.sluice.protocol.QueueSettings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongFunction;
import java.util.function.UnaryOperator;

/**
 * One logical connection to a Sluice broker, kept alive across network failures by reconnecting. Thread-safe.
 *
 * <p>Threads: one Netty network thread ({@code sluice-client-io-*}) owns all connection state: the channel,
 * pending requests, producer windows, consumer ack batches and open transactions; every public method hands
 * its work to that thread. Handlers, flow listeners and future completions run on dispatch threads
 * ({@code sluice-client-dispatch-*}), never on the network thread, unless
 * {@link ConnectionOptions#callbacksOnNetworkThread()} asks for exactly that ({@link Callbacks}); blocking methods of the client
 * refuse to run on any of its network threads (see {@link #checkMayBlock}).
 * {@link #close()} stops both.
 *
 * <p>Reconnect (rule "resend unconfirmed"): when the connection drops and the {@link ReconnectPolicy} is on,
 * queue requests in flight fail with {@link ConnectionLostException} (they are not idempotent in general);
 * publishes not yet confirmed are kept and, after the next HELLO_OK, sent again with the same producerId and
 * sequence, in order (at-least-once; the broker may use the pair to drop duplicates). Consumers are
 * subscribed again with their full credit; acks for messages of the old connection are dropped, because the
 * broker requeued those messages, and those not yet handed to the application are not handed to it. Queues are not declared again. With reconnect off, or after
 * {@link #close()}, unconfirmed publishes fail with {@link ConnectionLostException}, and consumers end with it
 * ({@link Consumer#failure()}; their {@code receive} throws it).
 *
 * <p>Clusters ({@link ConnectionOptions#bootstrap()}): the connection goes to the leader. A node that is not
 * the leader refuses or closes with NOT_LEADER naming it, and the next attempt goes there; a lost connection
 * goes on to the next node of the list ({@link BrokerAddresses}). The resend above is what makes a failover
 * lose nothing: the new leader stores each unconfirmed message once, by its producerId and sequence.
 */
public final class Connection implements AutoCloseable {
    /** When a SUBSCRIBE or a named producer's resume after a reconnect is refused for now: the first wait, doubled up to the cap. */
    static final long RETRY_FIRST_DELAY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    static final long RETRY_MAX_DELAY_NANOS = TimeUnit.SECONDS.toNanos(5);
    private static final Logger LOG = LoggerFactory.getLogger(Connection.class);
    /** The frame limit before HELLO_OK tells the negotiated one. */
    static final int HANDSHAKE_MAX_FRAME_BYTES = 16 * 1024 * 1024;

    private final ConnectionOptions options;
    private final EventLoop loop;
    private final Callbacks callbacks;
    /** Where each attempt goes, the network connections they open, the reconnect after a loss. */
    private final ConnectionAttempts attempts;

    // Owned by the network thread.
    /** Written on the network thread only; volatile for {@link #isConnected()}, which any thread may call. */
    private volatile Channel channel;
    private int session;
    private int maxFrameBytes = HANDSHAKE_MAX_FRAME_BYTES;
    private final ClientPublishWindow publishWindow = new ClientPublishWindow();
    /** Requests waiting for their answer; on the network thread. */
    private final PendingRequests requests;
    /** Builds, registers and writes each request; its answer completes it through {@link #requests}. */
    private final RequestSender requestSender;
    private final Map<Long, Producer> producers = new HashMap<>();
    private final Map<Integer, Consumer> consumers = new HashMap<>();
    /** Each consumer's SUBSCRIBE: the first, and again after each reconnect. */
    private final ConsumerSubscriptions subscriptions = new ConsumerSubscriptions(this, consumers);
    /** Each named producer's first PRODUCER_INIT, through a reconnect under way. */
    private final NamedProducerRegistrations producerRegistrations = new NamedProducerRegistrations(this, producers);
    private final OpenTransactions transactions = new OpenTransactions();
    /** Hands each frame after the handshake to what waits for it. */
    private final FrameDispatch frames;

    /** The one close, and whether it has begun. */
    private final ConnectionClose closing;
    private volatile String brokerName = "";
    /** Whether the broker's last HELLO_OK granted transactions (docs/protocol.md, "Capabilities"). */
    private volatile boolean transactionsGranted;

    private Connection(ConnectionOptions options, UnaryOperator<Executor> callbackExecutorSeam) {
        this.options = options;
        BrokerAddresses addresses = new BrokerAddresses(options.bootstrap().isEmpty()
                ? List.of(new BrokerAddresses.Address(options.host(), options.port()))
                : options.bootstrap().stream().map(BrokerAddresses.Address::parse).toList());
        // Built first: a bad TLS file fails here, before any thread exists.
        ClientTls tls = options.tls() ? ClientTls.create(options.trustCertificates(), options.trustStore(),
                options.trustStorePassword(), options.clientCertificate(), options.clientKey(), options.hostnameVerification()) : null;
        boolean epoll = Epoll.isAvailable();
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, new NetworkThreads(),
                epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
        this.loop = group.next();
        this.callbacks = new Callbacks(options.callbacksOnNetworkThread(), loop, addresses.current().toString(),
                callbackExecutorSeam);
        this.closing = new ConnectionClose(this, loop, group, callbacks, consumers);
        this.requests = new PendingRequests(loop, callbacks::complete);
        this.requestSender = new RequestSender(this, requests, callbacks);
        this.attempts = new ConnectionAttempts(this, options, loop, addresses, tls, epoll);
        this.frames = new FrameDispatch(requests, producers, consumers, transactions, publishWindow, attempts,
                options.errorListener(), new SerialExecutor(callbacks::dispatch));
    }

    /**
     * Connects and completes the handshake, blocking up to the connect timeout. The first connection is not
     * retried: a failure here throws, so a wrong address or password is reported at once.
     *
     * @throws ConnectionLostException  the broker could not be reached or closed the connection
     * @throws SluiceException          the broker refused the handshake (the code says why)
     * @throws SluiceTimeoutException   no HELLO_OK within the connect timeout
     * @throws IllegalStateException    called on a network thread of the client (see {@link #checkMayBlock})
     */
    public static Connection connect(ConnectionOptions options) {
        return connect(options, UnaryOperator.identity());
    }

    /**
     * As {@link #connect(ConnectionOptions)}, the executor the connection's callbacks are handed to being what
     * {@code callbackExecutorSeam} makes of the one they would be (the dispatch pool, or the network thread): for tests
     * that hold callbacks back or have the pool refuse them.
     */
    static Connection connect(ConnectionOptions options, UnaryOperator<Executor> callbackExecutorSeam) {
        refuseOnNetworkThread("Connection.connect"); // it waits for the handshake, like the other blocking calls
        Connection connection = new Connection(options, callbackExecutorSeam);
        try {
            connection.attempts.connectFirst();
            return connection;
        } catch (InterruptedException e) {
            connection.close();
            Thread.currentThread().interrupt();
            throw new SluiceException("interrupted while connecting to " + connection.address(), e);
        } catch (RuntimeException e) {
            connection.close();
            throw e;
        }
    }

    /** The broker's name from HELLO_OK. */
    public String brokerName() {
        return brokerName;
    }

    /** Whether unconfirmed publishes are kept and sent again when the network connection is lost (reconnecting, not closed). */
    boolean resendsAfterLoss() {
        return options.reconnectPolicy().enabled() && !isClosed();
    }

    /** Whether a handshaken network connection is up right now. */
    public boolean isConnected() {
        return channel != null && channel.isActive();
    }

    /**
     * Creates or checks a queue; completes with its ready message count once the broker answers OK, which
     * for a new queue is once the queue is durable. To declare many queues, call this for each and then
     * wait for all: declares sent back to back are created together, sharing their fsyncs, and so cost
     * far less than {@link #declareQueue} one after the other (docs/protocol.md, "Queue management").
     */
    public CompletableFuture<Long> declareQueueAsync(String queue, QueueSettings settings) {
        return queueRequest(queue, id -> new DeclareQueueFrame(id, queue, settings), "DECLARE_QUEUE");
    }

    /**
     * Blocking {@link #declareQueueAsync} with the request timeout.
     *
     * @throws IllegalArgumentException the queue name is longer than the wire carries (65,535 UTF-8 bytes)
     */
    public long declareQueue(String queue, QueueSettings settings) {
        checkMayBlock("declareQueue");
        QueueName.of(queue); // thrown as it is, not wrapped by await
        return await(declareQueueAsync(queue, settings), options.requestTimeout(), "DECLARE_QUEUE " + queue);
    }

    /** Deletes a queue and its messages; completes with the number of messages removed. */
    public CompletableFuture<Long> deleteQueueAsync(String queue) {
        return queueRequest(queue, id -> new DeleteQueueFrame(id, queue), "DELETE_QUEUE");
    }

    public long deleteQueue(String queue) {
        checkMayBlock("deleteQueue");
        QueueName.of(queue);
        return await(deleteQueueAsync(queue), options.requestTimeout(), "DELETE_QUEUE " + queue);
    }

    /** Removes every ready message of a queue; completes with the number removed. */
    public CompletableFuture<Long> purgeQueueAsync(String queue) {
        return queueRequest(queue, id -> new PurgeQueueFrame(id, queue), "PURGE_QUEUE");
    }

    public long purgeQueue(String queue) {
        checkMayBlock("purgeQueue");
        QueueName.of(queue);
        return await(purgeQueueAsync(queue), options.requestTimeout(), "PURGE_QUEUE " + queue);
    }

    /**
     * A queue request answered with a message count. A queue name the wire cannot carry fails the future at once with
     * {@link IllegalArgumentException} (a null one with {@link NullPointerException}): checked here, not by the frame
     * built on the network thread, where the exception would reach nobody and the caller would wait out the request
     * timeout.
     */
    private CompletableFuture<Long> queueRequest(String queue, LongFunction<Frame> frameFactory, String type) {
        try {
            QueueName.of(queue);
        } catch (RuntimeException refused) {
            return CompletableFuture.failedFuture(refused);
        }
        return requestSender.request(frameFactory, type + " " + queue).thenApply(ok -> ok.messageCount().orElse(0L));
    }

    /**
     * Creates a producer for one queue: with a fresh random producerId, or, with {@link ProducerOptions#name()},
     * a named producer, registered with the broker before this returns (its sequences continue after the
     * last one the broker stored under the name; an older instance under the name is fenced), waiting up to the
     * request timeout, through a reconnect under way (whose handshake registers it; see
     * {@link NamedProducerRegistrations}).
     *
     * @throws IllegalStateException    a producer of that name is already open on this connection
     * @throws IllegalArgumentException the queue name is longer than the wire carries (65,535 UTF-8 bytes)
     */
    public Producer createProducer(String queue, ProducerOptions producerOptions) {
        // Every PUBLISH of the producer would throw on the network thread, building its frame.
        QueueName.of(queue);
        checkOpen();
        checkMayBlock("createProducer");
        return open(new Producer(this, queue, producerOptions));
    }

    /**
     * Registers a producer {@link #createProducer} made, and a named one with the broker (see
     * {@link NamedProducerRegistrations}); package-private for the tests that open a producer createProducer would
     * refuse, to see that its failure stays its own.
     */
    Producer open(Producer producer) {
        producerRegistrations.register(producer);
        return producer;
    }

    /** On loop: a new producer starts from the FLOW its queue last heard on this network connection (told once per connection). */
    void startFromHeardFlowOnLoop(Producer producer) {
        FlowFrame heard = frames.heardFlow(producer.queue());
        if (heard != null) {
            producer.onFlowOnLoop(heard);
        }
    }

    /**
     * Subscribes with a push handler; returns once the broker answered OK to SUBSCRIBE, waiting up to the request
     * timeout, through a reconnect under way (whose handshake sends the SUBSCRIBE; see {@link ConsumerSubscriptions}).
     *
     * @throws IllegalArgumentException the queue name is longer than the wire carries (65,535 UTF-8 bytes)
     */
    public Consumer subscribe(String queue, ConsumerOptions consumerOptions, MessageHandler handler) {
        if (handler == null) {
            throw new NullPointerException("handler");
        }
        return subscribeInternal(queue, consumerOptions, handler);
    }

    /**
     * Subscribes for pulling with {@link Consumer#receive(Duration)}; returns once the broker answered OK, as
     * {@link #subscribe(String, ConsumerOptions, MessageHandler)} does.
     *
     * @throws IllegalArgumentException the queue name is longer than the wire carries (65,535 UTF-8 bytes)
     */
    public Consumer subscribe(String queue, ConsumerOptions consumerOptions) {
        return subscribeInternal(queue, consumerOptions, null);
    }

    private Consumer subscribeInternal(String queue, ConsumerOptions consumerOptions, MessageHandler handler) {
        QueueName.of(queue); // a name the wire cannot carry would throw on the network thread, building SUBSCRIBE
        checkOpen();
        checkMayBlock("subscribe");
        return subscriptions.subscribe(queue, consumerOptions, handler);
    }

    /**
     * A transaction with the broker's default timeout (docs/protocol.md, "Transactions").
     *
     * @throws UnsupportedOperationException if the broker did not grant transactions in its HELLO_OK (an
     *                                       older broker, or a cluster node below entry level 6): no TX frame is sent
     */
    public Transaction transaction() {
        checkOpen();
        checkTransactionsGranted();
        return new Transaction(this, transactions.nextId(), 0);
    }

    /**
     * A transaction the broker rolls back (with TX_ABORTED TRANSACTION_TIMED_OUT) once it has been open for
     * {@code timeout}, counted from its first frame; see {@link Transaction}.
     */
    public Transaction transaction(Duration timeout) {
        if (timeout.isNegative() || timeout.isZero() || timeout.toMillis() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("transaction timeout " + timeout + " must be positive and at most "
                    + Integer.MAX_VALUE + " ms");
        }
        checkOpen();
        checkTransactionsGranted();
        return new Transaction(this, transactions.nextId(), (int) Math.max(1, timeout.toMillis()));
    }

    /** A broker that does not serve transactions would close the connection on a TX frame it does not know. */
    private void checkTransactionsGranted() {
        if (!transactionsGranted) {
            throw new UnsupportedOperationException("broker '" + brokerName + "' at " + address() + " does not serve "
                    + "transactions: its HELLO_OK did not grant the TRANSACTIONS capability (a broker that predates "
                    + "transactions, or a cluster node whose entry level is below 6, which replicated transactions need)");
        }
    }

    /**
     * Closes the connection: sends CLOSE, fails everything still in flight with {@link ConnectionLostException},
     * and stops the client's threads; returns once they stopped, callbacks that were running included. Safe to call
     * more than once and from several threads at once: every call returns only once the close is complete (a call
     * from a callback on a dispatch thread, once the network thread stopped: it cannot wait for its own callback to
     * return). From the client's network threads it throws {@link IllegalStateException} (it waits for them to stop),
     * unless another call is already closing, which it then leaves to finish.
     */
    @Override
    public void close() {
        closing.close();
    }

    /**
     * On loop, the close's step on the network thread ({@link ConnectionClose}): everything in flight fails with the
     * close, and CLOSE is written; {@code done} completes once the network connection closed, or after a second.
     */
    void closeOnLoop(CompletableFuture<Void> done) {
        ConnectionLostException lost = new ConnectionLostException(
                "connection to " + address() + " was closed by the application");
        transactions.connectionLostOnLoop(lost);
        requests.failAll(lost);
        for (Producer producer : List.copyOf(producers.values())) {
            producer.failAll(lost);
        }
        producerRegistrations.connectionClosedOnLoop(lost);
        producers.clear();
        for (Consumer consumer : consumers.values()) {
            consumer.failedOnLoop(lost); // receive() throws it, rather than return null as if the queue were empty
        }
        subscriptions.connectionClosedOnLoop(lost);
        consumers.clear();
        Channel current = channel;
        channel = null;
        if (current != null && current.isActive()) {
            current.writeAndFlush(new CloseFrame(ErrorCode.NONE, "client closed the connection"))
                    .addListener(ignored -> current.close());
            current.closeFuture().addListener(ignored -> done.complete(null));
            loop.schedule(() -> done.complete(null), 1, TimeUnit.SECONDS);
        } else {
            done.complete(null);
        }
    }

    // ---- package-private services for Producer and Consumer; "on loop" methods run on the network thread

    ConnectionOptions options() {
        return options;
    }

    boolean isClosed() {
        return closing.isClosed();
    }

    /**
     * On loop, first thing in the task of a subscribe() or createProducer: whether it must register nothing, having
     * given up ({@code waiting} done) before this thread took it, or found the connection closed or lost for good
     * ({@code waiting} then failed with that).
     */
    boolean refusesRegistrationOnLoop(CompletableFuture<?> waiting, String request) {
        if (waiting.isDone()) {
            return true;
        }
        if (isClosed()) {
            waiting.completeExceptionally(closedException());
            return true;
        }
        if (channel == null && !resendsAfterLoss()) {
            waiting.completeExceptionally(new ConnectionLostException(request + " failed: the connection to " + address()
                    + " was lost and reconnecting is off"));
            return true;
        }
        return false;
    }

    /**
     * Runs {@code task} on the network thread for the call waiting on {@code call}, which fails if the connection is
     * closed, and, where callbacks run, with what the task throws: Netty would log and drop that, and the call would
     * wait out its timeout.
     */
    void runOnLoop(Runnable task, CompletableFuture<?> call) {
        try {
            // A defect of the client's, not the broker's answer: logged, as Netty would have, whether or not the call was
            // still waiting for it.
            loop.execute(owing("work for a waiting call", "the call fails with it",
                    thrown -> callbacks.complete(call, null, thrown), task));
        } catch (RejectedExecutionException e) {
            call.completeExceptionally(closedException());
        }
    }

    /** What work refused because the connection is closed fails with. */
    ConnectionLostException closedException() {
        return new ConnectionLostException("connection to " + address() + " is closed");
    }

    /** The network thread as an executor; it throws {@link RejectedExecutionException} once closed. */
    java.util.concurrent.Executor loopExecutor() {
        return loop;
    }

    /**
     * Work for the network thread that owes an outcome (a call, a consumer, a producer): what it throws is logged, as
     * {@code what} threw and {@code consequence}, and handed to {@code owed}, which fails what the work owes; see
     * {@link OwingTask}.
     */
    OwingTask owing(String what, String consequence, java.util.function.Consumer<Throwable> owed, Runnable work) {
        return new OwingTask(LOG, what, consequence, owed, work);
    }

    /**
     * Runs {@code task} on the network thread after {@code delayNanos}. An {@link OwingTask} only: a scheduled task's
     * exception would go to Netty's log, and what it owed would wait for good.
     */
    ScheduledFuture<?> scheduleOnLoop(OwingTask task, long delayNanos) {
        return loop.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
    }

    void executeOnLoop(Runnable task) {
        try {
            loop.execute(task);
        } catch (RejectedExecutionException e) {
            LOG.debug("Dropped a task after the connection to {} closed.", address());
        }
    }

    /** Runs {@code task} where callbacks run; dropped once the connection is closed. */
    void dispatch(Runnable task) {
        callbacks.dispatch(task);
    }

    /** Where callbacks run: the dispatch pool, or the network thread. */
    java.util.concurrent.Executor dispatchExecutor() {
        return callbacks.executor();
    }

    /**
     * Refuses a blocking call on a network thread of the client (possible only from a callback with
     * {@link ConnectionOptions#callbacksOnNetworkThread()} on): on this connection's thread it would wait for
     * the thread it occupies, on another connection's it would stall that connection and can deadlock two.
     */
    void checkMayBlock(String what) {
        if (NetworkThreads.isCurrent()) {
            refuseOnNetworkThread(what + " (connection to " + address() + ")");
        }
    }

    /** Throws, on a network thread of the client, for the blocking call {@code what}; see {@link #checkMayBlock}. */
    private static void refuseOnNetworkThread(String what) {
        if (NetworkThreads.isCurrent()) {
            throw new IllegalStateException(what + " blocks, and was called on"
                    + " a network thread of the client (from a callback, with callbacksOnNetworkThread on), which"
                    + " must not wait; use the asynchronous form or a thread of your own");
        }
    }

    /** Whether the caller is a network thread of the client (this connection's or another's). */
    boolean onNetworkThread() {
        return NetworkThreads.isCurrent();
    }

    /** The broker's host:port, for messages. */
    String address() {
        return attempts.address();
    }

    /** On loop. */
    OpenTransactions transactions() {
        return transactions;
    }

    /** How the client's own classes send requests to the broker. */
    RequestSender requestSender() {
        return requestSender;
    }

    /** On loop: the handshaken channel, or {@code null} while disconnected. */
    Channel activeChannel() {
        return channel;
    }

    /** On loop: the number of the current network connection, counting handshakes. */
    int session() {
        return session;
    }

    /** On loop. */
    int maxFrameBytes() {
        return maxFrameBytes;
    }

    /**
     * On loop: takes one message from the publish window if it fits: {@code encodedMessageBytes} as
     * {@link OutgoingHeaders#encodedMessageBytes} measured it, {@code payloadBytes} of it payload.
     */
    boolean tryTakePublishWindow(int encodedMessageBytes, int payloadBytes) {
        return publishWindow.tryTake(OutgoingHeaders.headersAndPayloadBytes(encodedMessageBytes), payloadBytes);
    }

    /** On loop: the publish window's messages as the broker granted them ({@link ClientPublishWindow#grantedMessages}). */
    long publishWindowMessages() {
        return publishWindow.grantedMessages();
    }

    /** Removes {@code producer}, not whichever producer now has its id (a named producer's new instance). */
    void removeProducer(long producerId, Producer producer) {
        executeOnLoop(() -> producers.remove(producerId, producer));
    }

    /** Removes {@code consumer}, closed by the application, once its UNSUBSCRIBE was answered or given up. */
    void removeConsumer(Consumer consumer) {
        executeOnLoop(() -> {
            consumers.remove(consumer.consumerTag(), consumer);
            subscriptions.removedOnLoop(consumer);
        });
    }

    /** A new serial executor where callbacks run, that completes what it is given even after close (Callbacks). */
    io.sluice.client.internal.SerialExecutor serialCompletions() {
        return callbacks.serialCompletions();
    }

    /** Completes a future where callbacks run, so by default they never run on the network thread. */
    <T> void completeOnDispatch(CompletableFuture<T> future, T value, Throwable failure) {
        callbacks.complete(future, value, failure);
    }

    /** Waits for {@code future}, turning its outcome into the client's exceptions. */
    static <T> T await(CompletableFuture<T> future, Duration timeout, String what) {
        try {
            return future.get(TimeUnit.NANOSECONDS.convert(timeout), TimeUnit.NANOSECONDS); // saturated, as a "forever" asks
        } catch (TimeoutException e) {
            throw new SluiceTimeoutException(what + " did not finish within " + timeout.toMillis() + " ms");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof SluiceException sluice) {
                throw sluice;
            }
            throw new SluiceException(what + " failed: " + cause, cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SluiceException("interrupted while waiting for " + what, e);
        }
    }

    private void checkOpen() {
        if (isClosed()) {
            throw closedException();
        }
    }

    // ---- connecting, on loop

    void onHelloOk(Channel ch, HelloOkFrame hello, FrameDecoder decoder, FrameEncoder encoder,
                           CompletableFuture<Void> handshake) {
        if (isClosed() || handshake.isDone()) {
            ch.close();
            return;
        }
        if (hello.maxFrameBytes() > 0) {
            maxFrameBytes = hello.maxFrameBytes();
            decoder.maxFrameBytes(maxFrameBytes);
            encoder.maxFrameBytes(maxFrameBytes);
        }
        if (hello.heartbeatIntervalMs() > 0) {
            int interval = hello.heartbeatIntervalMs();
            // reader side: Netty's handler; writer side: WriterIdleTimer, which needs no promise per write
            ch.pipeline().addBefore("handler", "idle", new IdleStateHandler(2L * interval, 0, 0, TimeUnit.MILLISECONDS));
            ch.pipeline().addBefore("handler", "write-idle", new WriterIdleTimer(interval));
        }
        brokerName = hello.brokerName();
        transactionsGranted = hello.grantsTransactions();
        publishWindow.granted(hello.publishWindowMessages(), hello.publishWindowBytes(), hello.grantsWindowCountsHeaders());
        channel = ch;
        session++;
        attempts.handshaken();
        if (session > 1) {
            LOG.info("Reconnected to {} ({}); resubscribing {} consumers and resending unconfirmed publishes.",
                    address(), brokerName, consumers.size());
        }
        subscriptions.onHandshakeOnLoop(session);
        frames.newSession();
        Producer.eachOnLoop(producers.values(), "resending after reconnecting", Producer::onReconnectedOnLoop);
        producerRegistrations.onHandshakeOnLoop();
        handshake.complete(null);
    }

    void onChannelInactive(Channel ch, CompletableFuture<Void> handshake) {
        if (!handshake.isDone()) {
            handshake.completeExceptionally(new ConnectionLostException(
                    "connection to " + address() + " closed during the handshake"));
        }
        if (ch != channel) {
            return;
        }
        channel = null;
        ConnectionLostException lost = new ConnectionLostException("connection to " + address() + " was lost"
                + frames.closeReason());
        transactions.connectionLostOnLoop(lost); // first: a commit in flight is in doubt, not merely refused
        requests.failAll(lost);
        boolean retain = resendsAfterLoss();
        for (Producer producer : List.copyOf(producers.values())) {
            if (!retain) {
                producer.failAll(lost);
            }
        }
        for (Consumer consumer : consumers.values()) {
            consumer.onConnectionLostOnLoop();
            if (!retain) {
                consumer.failedOnLoop(lost); // lost for good: receive() throws it, rather than wait for what cannot come
            }
        }
        if (retain) {
            LOG.warn("Lost the connection to {}; unconfirmed publishes will be resent after reconnecting.", address());
            attempts.reconnectAfterLoss();
        }
    }

    void onFrame(Channel ch, Frame frame) {
        if (ch == channel) {
            frames.onFrame(ch, frame);
        }
    }
}
