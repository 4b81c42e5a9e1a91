package io.sluice.client;

import io.sluice.protocol.FrameType;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.ProducerInitFrame;
import io.sluice.protocol.ProducerOkFrame;
import io.sluice.protocol.UnsubscribeFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.HashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Work the network thread does for a call that waits (subscribe(), createProducer, a request) and that throws fails
 * that call at once with the exception. Netty logs and drops what a task throws, and a CompletableFuture keeps what a
 * continuation throws to itself: left to them, the call would wait out its timeout (30 s by default) and then report a
 * timeout instead of the cause.
 */
class NetworkThreadTaskFailureTest {
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);

    private final FakeBroker broker = new FakeBroker();
    private Connection connection;

    @BeforeEach
    void connect() {
        connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .requestTimeout(REQUEST_TIMEOUT).build());
    }

    @AfterEach
    void stop() {
        connection.close();
        broker.close();
    }

    @Test
    void aTaskRunForACallThatThrowsFailsTheCall() {
        IllegalStateException defect = new IllegalStateException("a defect in the task");
        CompletableFuture<Void> call = new CompletableFuture<>();
        connection.runOnLoop(() -> {
            throw defect;
        }, call);
        assertSame(defect, failureOf(call));
    }

    @Test
    void takingAFirstAnswerThatThrowsFailsTheCallWaitingForIt() {
        IllegalStateException defect = new IllegalStateException("a defect in taking the answer");
        FirstAnswerWaits<String, String> waits = new FirstAnswerWaits<>(connection);
        CompletableFuture<String> call = new CompletableFuture<>();
        // As a request's continuation runs it: on the network thread, where nothing reports what it throws.
        connection.executeOnLoop(() -> {
            waits.add("orders", call);
            waits.take("orders", null, () -> {
                throw defect;
            }, refused -> { });
        });
        assertSame(defect, failureOf(call));
    }

    /**
     * The answer to a TX_COMMIT is taken on the network thread; what taking it throws fails the commit, rather than
     * leave its future, its request answered and gone, never completed: commit() would wait for good.
     */
    @Test
    void takingTheAnswerToACommitThatThrowsFailsTheCommit() throws Exception {
        IllegalStateException defect = new IllegalStateException("a defect in forgetting an ended transaction");
        forgettingATransactionThrows(defect);
        Transaction transaction = connection.transaction();
        transaction.publish("invoices", new byte[] {1});
        assertSame(defect, failureOf(transaction.commitAsync()));
    }

    /**
     * A named producer's resume after a reconnect answered with a plain OK, which is not its answer: the producer ends,
     * and the message waiting for the resume fails at once, rather than wait for good with what taking the answer
     * threw in a future nobody reads.
     */
    @Test
    void aResumeAnsweredWithAnotherFrameFailsTheMessagesWaitingForIt() throws Exception {
        try (FakeBroker reconnected = new FakeBroker(); Connection reconnecting = reconnected.connectReconnecting(REQUEST_TIMEOUT)) {
            reconnected.confirmPublishes = false;
            Producer producer = reconnecting.createProducer("orders", ProducerOptions.DEFAULT.withName("billing"));
            CompletableFuture<Void> unconfirmed = producer.sendAsync(new byte[] {1});
            TestWait.until(() -> reconnected.publishedSequences.size() == 1);
            reconnected.holdProducerResumes = true;
            reconnected.dropConnections();
            TestWait.until(() -> reconnected.count(ProducerInitFrame.class) == 2); // the resume, held
            // The wrong answer closes the connection: the reconnect's handshake is held, so that no new resume starts.
            reconnected.holdHellos = true;
            reconnected.answerHeldProducerResumes(init -> new OkFrame(init.requestId()));
            UnexpectedAnswerException failure = assertInstanceOf(UnexpectedAnswerException.class, failureOf(unconfirmed));
            assertEquals(FrameType.OK, failure.received());
            Throwable later = failureOf(producer.sendAsync(new byte[] {2}));
            assertTrue(later.getMessage().contains("is closed"), "the producer ended: " + later);
        }
    }

    /**
     * A consumer closed on the network thread whose UNSUBSCRIBE is answered with PRODUCER_OK rather than OK: the
     * UNSUBSCRIBE fails (UnexpectedAnswersTest), and the close completes, so a close() from another thread returns at
     * once. It fails if the answer is cast to OK as the continuation is entered: what that throws would stay in a future
     * nobody reads, the consumer on the connection, and every other close() would wait out its request timeout.
     */
    @Test
    void aCloseOnTheNetworkThreadWhoseUnsubscribeIsAnsweredWithAnotherFrameThanOkCompletes() throws Exception {
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
        broker.answerInstead = frame -> frame instanceof UnsubscribeFrame unsubscribe
                ? new ProducerOkFrame(unsubscribe.requestId(), 1, 1, 0) : null;
        CompletableFuture<Void> closedOnTheNetworkThread = new CompletableFuture<>();
        connection.executeOnLoop(() -> {
            consumer.close(); // without waiting for the UNSUBSCRIBE's answer
            closedOnTheNetworkThread.complete(null);
        });
        closedOnTheNetworkThread.get(REQUEST_TIMEOUT.toMillis() / 10, TimeUnit.MILLISECONDS);
        CompletableFuture.runAsync(consumer::close).get(REQUEST_TIMEOUT.toMillis() / 10, TimeUnit.MILLISECONDS);
        assertEquals(1, broker.frames(UnsubscribeFrame.class).size(),
                "one UNSUBSCRIBE: the close on the network thread completed, and the second close() had none to send");
    }

    /**
     * A commit whose messages wait for the publish window past its deadline is failed by a timer on the network
     * thread; what failing it throws fails the commit. A scheduled task's exception goes nowhere, not even to the
     * log: left there, the commit's future would never complete.
     */
    @Test
    void aCommitWhoseDeadlineTimerThrowsFailsWithTheException() throws Exception {
        broker.publishWindowMessages = 1;
        connection.close();
        connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .requestTimeout(Duration.ofMillis(200)).build());
        IllegalStateException defect = new IllegalStateException("a defect in forgetting an ended transaction");
        forgettingATransactionThrows(defect);
        Transaction transaction = connection.transaction();
        transaction.publish("invoices", new byte[] {1});
        transaction.publish("invoices", new byte[] {2}); // waits for the window, which the fake broker never widens
        assertSame(defect, failureOf(transaction.commitAsync()));
    }

    /**
     * A rollback is carried out on the network thread; what that throws fails the rollback. Logged and dropped by
     * Netty, it would leave the rollback's future never completed.
     */
    @Test
    void aRollbackThatThrowsOnTheNetworkThreadFailsWithTheException() throws Exception {
        IllegalStateException defect = new IllegalStateException("a defect in forgetting an ended transaction");
        forgettingATransactionThrows(defect);
        Transaction transaction = connection.transaction();
        transaction.publish("invoices", new byte[] {1}); // batched: nothing reached the broker
        assertSame(defect, failureOf(transaction.rollbackAsync()));
    }

    /**
     * A publish the network thread cannot take into its transaction fails the transaction, so its commit fails with
     * the exception: dropped where it threw, the publish would be missing from a commit answered OK.
     */
    @Test
    void aPublishThatThrowsOnTheNetworkThreadFailsTheCommit() throws Exception {
        IllegalStateException defect = new IllegalStateException("a defect in noting an open transaction");
        openTransactionsWith(new HashMap<>() {
            @Override
            public Transaction put(Long key, Transaction value) {
                throw defect;
            }
        });
        Transaction transaction = connection.transaction();
        transaction.publish("invoices", new byte[] {1});
        assertSame(defect, failureOf(transaction.commitAsync()).getCause());
    }

    /** The connection's bookkeeping of its open transactions throws as it forgets one. */
    private void forgettingATransactionThrows(RuntimeException defect) throws ReflectiveOperationException {
        openTransactionsWith(new HashMap<>() {
            @Override
            public boolean remove(Object key, Object value) {
                throw defect;
            }
        });
    }

    /** The connection keeps its open transactions in {@code byId} from now on (installed through reflection). */
    private void openTransactionsWith(HashMap<Long, Transaction> byId) throws ReflectiveOperationException {
        Field field = OpenTransactions.class.getDeclaredField("byId");
        field.setAccessible(true);
        field.set(connection.transactions(), byId);
    }

    /** What {@code call} failed with, within a tenth of the request timeout: at once, not at the timeout. */
    private static Throwable failureOf(CompletableFuture<?> call) {
        ExecutionException failed = assertThrows(ExecutionException.class,
                () -> call.get(REQUEST_TIMEOUT.toMillis() / 10, TimeUnit.MILLISECONDS));
        return failed.getCause();
    }
}
