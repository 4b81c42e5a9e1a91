package io.sluice.client;

import io.netty.bootstrap.Bootstrap;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FlowFrame;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Work the network thread runs later or on an event (a timer, a reconnect, a retry, a connect's listener) and that throws
 * fails what it owes at once: the waiting call, the handshake, the consumer or producer it serves; a reconnect that threw
 * is followed by the next. Left to Netty, such an exception is logged ("A task raised an exception") and dropped: the
 * call would wait until its own timeout or for good, and the client would stop reconnecting without a word.
 */
class ScheduledTaskFailureTest {
    private static final Duration LONG = Duration.ofSeconds(30);
    /** How long an outcome owed "at once" may take: a tenth of the timeouts the calls have. */
    private static final long BOUND_MS = LONG.toMillis() / 10;

    private final FakeBroker broker = new FakeBroker();
    private final IllegalStateException defect = new IllegalStateException("a defect in the client's own bookkeeping");
    private Connection connection;

    @AfterEach
    void stop() {
        if (connection != null) {
            connection.close();
        }
        broker.close();
    }

    /** The first reconnect attempt throws as it opens its network connection; the next one goes, and connects. */
    @Test
    void aReconnectAttemptThatThrowsIsFollowedByTheNext() throws Exception {
        connection = broker.connectReconnecting(LONG);
        ConnectionAttempts attempts = field(Connection.class, "attempts", connection);
        Bootstrap original = field(ConnectionAttempts.class, "bootstrap", attempts);
        AtomicInteger throwsLeft = new AtomicInteger(1);
        setField(ConnectionAttempts.class, "bootstrap", attempts, new Bootstrap() {
            @Override
            public Bootstrap clone() {
                if (throwsLeft.getAndDecrement() > 0) {
                    throw defect;
                }
                return original.clone();
            }
        });
        broker.dropConnections();
        TestWait.until(() -> broker.count(HelloFrame.class) == 2 && connection.isConnected());
        assertEquals(0, connection.declareQueue("orders", QueueSettings.EMPTY));
    }

    /**
     * A user name longer than HELLO carries (65,535 UTF-8 bytes) cannot be sent: connect fails at once saying so. Before,
     * building HELLO threw in the connect's listener, Netty logged it, and connect waited out the connect timeout, then
     * reported a timeout. The builder refuses such a name since (ConnectionOptionsTest): set here behind its back, it
     * stands for any defect of that listener.
     */
    @Test
    void aConnectWhoseHelloCannotBeBuiltFailsAtOnceSayingWhy() throws Exception {
        ConnectionOptions options = ConnectionOptions.builder().host("127.0.0.1").port(broker.port()).connectTimeout(LONG)
                .reconnectPolicy(ReconnectPolicy.DISABLED).build();
        setField(ConnectionOptions.class, "user", options, "u".repeat(70_000));
        CompletableFuture<Connection> connecting = CompletableFuture.supplyAsync(() -> Connection.connect(options));
        Throwable failure = failureOf(connecting);
        Throwable cause = failure;
        while (cause != null && !(cause instanceof IllegalArgumentException)) {
            cause = cause.getCause();
        }
        assertNotNull(cause, "the cause is HELLO's refusal: " + failure);
        assertTrue(cause.getMessage().contains("user is 70000 UTF-8 bytes"), cause.getMessage());
    }

    /**
     * A consumer's SUBSCRIBE after a reconnect is refused for now (RESOURCE_LIMIT); its retry, a timer's task, throws:
     * the consumer ends, saying why, rather than leave the retry's exception to Netty's log and wait, never
     * subscribed, for good.
     */
    @Test
    void aResubscribeRetryThatThrowsEndsTheConsumer() throws Exception {
        connection = broker.connectReconnecting(LONG);
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
        AtomicInteger putsLeft = new AtomicInteger(1); // the resubscribe at the handshake; its retry throws
        ConsumerSubscriptions subscriptions = field(Connection.class, "subscriptions", connection);
        setField(ConsumerSubscriptions.class, "subscribedOnSession", subscriptions, new HashMap<Consumer, Integer>() {
            @Override
            public Integer put(Consumer key, Integer value) {
                if (putsLeft.getAndDecrement() <= 0) {
                    throw defect;
                }
                return super.put(key, value);
            }
        });
        broker.refuseSubscribes = ErrorCode.RESOURCE_LIMIT;
        broker.subscribeRefusals.set(1);
        broker.dropConnections();
        TestWait.until(() -> consumer.failure() != null);
        assertSame(defect, consumer.failure().getCause(), consumer.failure().toString());
    }

    /**
     * A consumer's ack flush timer throws: the consumer ends, saying why, and leaves the broker with an UNSUBSCRIBE (which
     * gives its unacked messages back), so that the broker stops delivering to it and holding its credit; a close()
     * after that sends no second one. It fails if the consumer stays subscribed until its connection closes.
     */
    @Test
    void anAckFlushTimerThatThrowsEndsTheConsumerAndUnsubscribesIt() throws Exception {
        connection = broker.connectReconnecting(LONG);
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
        setField(io.sluice.client.internal.OwingTask.class, "work", field(Consumer.class, "flushAcksTask", consumer),
                (Runnable) () -> {
                    throw defect;
                });
        broker.deliver(consumer.consumerTag(), 1, 2);
        Message first = consumer.receive(LONG);
        assertNotNull(consumer.receive(LONG));
        first.ack(); // batched: the flush timer writes it, and throws

        TestWait.until(() -> consumer.failure() != null);
        assertSame(defect, consumer.failure().getCause(), consumer.failure().toString());
        TestWait.until(() -> broker.count(io.sluice.protocol.UnsubscribeFrame.class) == 1);
        assertEquals(consumer.consumerTag(), broker.frames(io.sluice.protocol.UnsubscribeFrame.class).get(0).consumerTag());
        java.util.Map<Integer, Consumer> consumers = field(Connection.class, "consumers", connection);
        TestWait.until(() -> consumerCount(consumers) == 0);
        consumer.close();
        assertEquals(1, broker.count(io.sluice.protocol.UnsubscribeFrame.class), "close() after the end unsubscribes no more");
        assertEquals(0, connection.declareQueue("orders", QueueSettings.EMPTY), "the connection carries on");
    }

    /** How many consumers the connection holds, read on its network thread, which owns the map. */
    private int consumerCount(java.util.Map<Integer, Consumer> consumers) {
        CompletableFuture<Integer> count = new CompletableFuture<>();
        connection.executeOnLoop(() -> count.complete(consumers.size()));
        return count.join();
    }

    /**
     * While its queue is BLOCKED, a producer's timer fails the messages that waited longer than the blocked timeout; a
     * tick that throws ends the producer, failing its waiting message at once, rather than die with the exception and
     * leave the message waiting, unsent, until the queue is FREE again.
     */
    @Test
    void aBlockedTimerThatThrowsFailsTheWaitingMessages() throws Exception {
        connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .requestTimeout(LONG).reconnectPolicy(ReconnectPolicy.DISABLED).build());
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT.withBlockedTimeout(LONG));
        setField(Producer.class, "unsent", producer, new ArrayDeque<Object>() {
            @Override
            public Iterator<Object> iterator() {
                if (isEmpty()) {
                    return super.iterator(); // a tick before the message waits: the producer must still take it
                }
                throw defect;
            }
        });
        broker.send(new FlowFrame("orders", FlowState.BLOCKED, "quotaHardMessages: 10 ready, limit 10"));
        connection.declareQueue("orders", QueueSettings.EMPTY); // a round trip: the FLOW was handled, the timer runs
        Throwable failure = failureOf(producer.sendAsync(new byte[] {1}));
        assertSame(defect, failure.getCause(), failure.toString());
    }

    /**
     * A request frame longer than the broker's maxFrameBytes cannot be written: the encoder refuses it, and the request
     * fails at once saying so, rather than wait out its timeout for a write that failed unseen, then report that the
     * broker did not answer.
     */
    @Test
    void aRequestWhoseFrameCannotBeWrittenFailsAtOnceSayingWhy() {
        broker.helloMaxFrameBytes = 1024;
        connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .requestTimeout(LONG).reconnectPolicy(ReconnectPolicy.DISABLED).build());
        Throwable failure = failureOf(connection.declareQueueAsync("q".repeat(2000), QueueSettings.EMPTY));
        assertInstanceOf(SluiceException.class, failure);
        assertTrue(failure.getMessage().contains("exceeds maxFrameBytes 1024"), failure.getMessage());
        assertEquals(0, broker.count(io.sluice.protocol.DeclareQueueFrame.class));
        assertEquals(0, connection.purgeQueue("orders"), "the connection carries on");
    }

    /** What {@code call} failed with, within {@link #BOUND_MS}: at once, not at a timeout. */
    private static Throwable failureOf(CompletableFuture<?> call) {
        return assertThrows(ExecutionException.class, () -> call.get(BOUND_MS, TimeUnit.MILLISECONDS)).getCause();
    }

    @SuppressWarnings("unchecked")
    private static <T> T field(Class<?> owner, String name, Object target) throws ReflectiveOperationException {
        Field field = owner.getDeclaredField(name);
        field.setAccessible(true);
        return (T) field.get(target);
    }

    private static void setField(Class<?> owner, String name, Object target, Object value) throws ReflectiveOperationException {
        Field field = owner.getDeclaredField(name);
        field.setAccessible(true);
        field.set(target, value);
    }
}
