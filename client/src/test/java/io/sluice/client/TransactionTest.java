package io.sluice.client;

import io.sluice.client.FakeBroker.TxPublished;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.CreditFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.PublishCreditFrame;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.TxAbortedFrame;
import io.sluice.protocol.TxAckFrame;
import io.sluice.protocol.TxBeginFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxRollbackFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link Transaction} against the {@link FakeBroker}: the frames it writes, and how it ends or fails. */
class TransactionTest {
    /** Acks wait for the commit: the frames a transaction writes are then exactly predictable. */
    private static final ConsumerOptions ACKS_AT_COMMIT = new ConsumerOptions(100, 100, Duration.ofSeconds(30));

    private FakeBroker broker;
    private Connection connection;

    @BeforeEach
    void start() {
        broker = new FakeBroker();
        connection = connect();
    }

    @AfterEach
    void stop() {
        connection.close();
        broker.close();
    }

    private Connection connect() {
        return Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .requestTimeout(Duration.ofSeconds(5))
                .reconnectPolicy(new ReconnectPolicy(true, Duration.ofMillis(20), Duration.ofMillis(200), 2.0, 0.2))
                .build());
    }

    @Test
    void shouldAskForTransactionsAndRefuseOneLocallyWhenTheBrokerDoesNotGrantThem() {
        HelloFrame hello = broker.frames(HelloFrame.class).get(0);
        assertEquals(HelloFrame.CAPABILITY_TRANSACTIONS, hello.capabilities() & HelloFrame.CAPABILITY_TRANSACTIONS,
                "the client asks in every HELLO");

        broker.servedCapabilities = 0; // a broker that predates the capability, or a cluster node
        try (Connection old = connect()) {
            UnsupportedOperationException refused = assertThrows(UnsupportedOperationException.class, old::transaction);
            assertTrue(refused.getMessage().contains("does not serve transactions")
                    && refused.getMessage().contains("TRANSACTIONS capability"), refused.getMessage());
            assertThrows(UnsupportedOperationException.class, () -> old.transaction(Duration.ofSeconds(5)));
            assertTrue(old.isConnected(), "nothing was sent that could cost the connection");
        }
        assertEquals(0, broker.count(TxBeginFrame.class), "no TX frame reaches a broker that did not grant them");
        try (Transaction granted = connection.transaction()) {
            assertNotNull(granted, "the first connection's HELLO_OK granted them");
        }
    }

    @Test
    void shouldPipelineBeginAcksAndOneTxPublishPerQueueThenCommitWithARequestId() throws Exception {
        Consumer consumer = connection.subscribe("orders", ACKS_AT_COMMIT);
        List<Message> orders = receive(consumer, 1, 2, 3, 5);
        try (Transaction transaction = connection.transaction(Duration.ofSeconds(30))) {
            orders.forEach(transaction::ack);
            transaction.publish("invoices", bytes("invoice 1"));
            transaction.publish("audit", bytes("audited"), Map.of("order", "1"));
            transaction.publish("invoices", bytes("invoice 2"));
            transaction.commit();
        }
        long txnId = 1;
        long commitId = broker.frames(TxCommitFrame.class).get(0).requestId();
        assertEquals(List.of(
                new TxBeginFrame(txnId, 30_000),
                new TxAckFrame(txnId, consumer.consumerTag(), List.of(new IdRange(1, 3), IdRange.single(5))),
                new TxPublished(txnId, "invoices", List.of("0/0 invoice 1 []", "0/0 invoice 2 []")),
                new TxPublished(txnId, "audit", List.of("0/0 audited [order=1]")),
                new TxCommitFrame(commitId, txnId)), transactionFrames());
        assertEquals(List.of(), broker.frames(AckFrame.class), "no message acked in the transaction is acked again");
        assertThrows(IllegalStateException.class, orders.get(0)::ack);
    }

    /** A deadline of "forever" waits for the verdict; it threw ArithmeticException at once (too long for nanoseconds). */
    @Test
    void aCommitWithoutADeadlineWaitsForTheVerdict() {
        Transaction transaction = connection.transaction();
        transaction.publish("invoices", bytes("m"));
        transaction.commit(java.time.temporal.ChronoUnit.FOREVER.getDuration());
        assertEquals(1, broker.count(TxCommitFrame.class));
    }

    @Test
    void shouldWriteAFullBatchAtOnceAndTheRestAtCommit() {
        Transaction transaction = connection.transaction();
        for (int i = 0; i < 600; i++) {
            transaction.publish("invoices", bytes("m" + i));
        }
        TestWait.until(() -> broker.count(TxPublished.class) == 2);
        assertEquals(0, broker.count(TxCommitFrame.class), "the commit is not sent before it is asked for");
        transaction.commit();
        List<Integer> sizes = broker.frames(TxPublished.class).stream().map(frame -> frame.messages().size()).toList();
        assertEquals(List.of(256, 256, 88), sizes);
        assertEquals(new TxBeginFrame(transaction.id(), 0), transactionFrames().get(0), "the broker's default timeout");
    }

    @Test
    void shouldCountATransactionalAckAsSettledForTheConsumersCredit() throws Exception {
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT.withCredit(8));
        Message message = receive(consumer, 7).get(0);
        Transaction transaction = connection.transaction();
        transaction.ack(message);
        TestWait.until(() -> broker.count(CreditFrame.class) == 1);
        assertEquals(List.of(new TxBeginFrame(transaction.id(), 0),
                new TxAckFrame(transaction.id(), consumer.consumerTag(), List.of(IdRange.single(7))),
                new CreditFrame(consumer.consumerTag(), 1)), broker.received.stream()
                .filter(frame -> frame instanceof TxBeginFrame || frame instanceof TxAckFrame || frame instanceof CreditFrame)
                .toList(), "the TX_ACK goes out without waiting for the commit, the CREDIT after it");
        assertThrows(IllegalStateException.class, message::ack);
        assertThrows(IllegalStateException.class, () -> message.nack(NackAction.REQUEUE));
        assertThrows(IllegalStateException.class, () -> transaction.ack(message));
        transaction.commit();
    }

    @Test
    void shouldRollBackWhenClosedUncommittedAndSendNothingForATransactionThatNeverWroteAFrame() throws Exception {
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
        Message message = receive(consumer, 1).get(0);
        Transaction untouched = connection.transaction();
        Transaction staged = connection.transaction();
        staged.publish("invoices", bytes("never sent"));
        try (Transaction acked = connection.transaction()) {
            acked.ack(message);
            TestWait.until(() -> broker.count(TxAckFrame.class) == 1);
        }
        untouched.close();
        staged.close();
        connection.purgeQueue("orders"); // a round trip: anything written before it has arrived
        long rollbackId = broker.frames(TxRollbackFrame.class).get(0).requestId();
        assertEquals(List.of(new TxBeginFrame(3, 0), new TxAckFrame(3, consumer.consumerTag(), List.of(IdRange.single(1))),
                new TxRollbackFrame(rollbackId, 3)), transactionFrames());
        Transaction empty = connection.transaction();
        empty.commit();
        assertThrows(IllegalStateException.class, () -> empty.publish("invoices", bytes("late")));
        assertThrows(IllegalStateException.class, empty::commit);
        empty.close();
        assertEquals(3, transactionFrames().size(), "an empty commit needs no frame");
    }

    @Test
    void shouldHandUnwrittenAcksOfARollbackBackToTheirQueue() throws Exception {
        Consumer consumer = connection.subscribe("orders", ACKS_AT_COMMIT);
        List<Message> messages = receive(consumer, 4, 5);
        Transaction transaction = connection.transaction();
        transaction.ack(messages.get(0));
        transaction.ack(messages.get(1));
        transaction.rollback();
        TestWait.until(() -> broker.count(NackFrame.class) == 2);
        assertEquals(List.of(), transactionFrames(), "nothing of it reached the broker");
        assertEquals(List.of(List.of(IdRange.single(4)), List.of(IdRange.single(5))),
                broker.frames(NackFrame.class).stream().map(NackFrame::messageIds).toList());
    }

    @Test
    void shouldFailTheCommitWithTheBrokersCodeAndSentence() {
        broker.refuseCommits = ErrorCode.TRANSACTION_LIMIT;
        broker.refusalMessage = "transaction 1 holds 10001 messages, limit 10000";
        Transaction transaction = connection.transaction();
        transaction.publish("invoices", bytes("one too many"));
        SluiceException refused = assertThrows(SluiceException.class, transaction::commit);
        assertEquals(ErrorCode.TRANSACTION_LIMIT, refused.errorCode());
        assertEquals("transaction 1 holds 10001 messages, limit 10000", refused.brokerMessage());
        assertFalse(refused instanceof SluiceTimeoutException);
        transaction.close(); // ended by the commit: nothing more is sent
        assertEquals(0, broker.count(TxRollbackFrame.class));
    }

    @Test
    void shouldFailTheNextCallAndTheCommitWithTheAbortReason() {
        Transaction transaction = connection.transaction();
        for (int i = 0; i < Transaction.MAX_BATCH_MESSAGES; i++) {
            transaction.publish("nosuch", bytes("m" + i));
        }
        TestWait.until(() -> broker.count(TxPublished.class) == 1);
        String sentence = "TX_PUBLISH to queue nosuch was refused: no queue has this name";
        broker.send(new TxAbortedFrame(transaction.id(), ErrorCode.TRANSACTION_ABORTED, sentence));
        SluiceException aborted = awaitFailure(() -> transaction.publish("nosuch", bytes("after")));
        assertEquals(ErrorCode.TRANSACTION_ABORTED, aborted.errorCode());
        assertEquals(sentence, aborted.brokerMessage());
        assertSame(aborted, assertThrows(SluiceException.class, transaction::commit));
        transaction.close();
        TestWait.until(() -> broker.count(TxRollbackFrame.class) == 1);
        assertEquals(transaction.id(), broker.frames(TxRollbackFrame.class).get(0).txnId(),
                "one TX_ROLLBACK, so that the broker forgets the transaction it rolled back");
        assertEquals(0, broker.count(TxCommitFrame.class), "the commit failed without a TX_COMMIT");
    }

    @Test
    void shouldFailACommitAwaitingItsAnswerWhenTheBrokerAbortsIt() throws Exception {
        Transaction transaction = connection.transaction();
        CompletableFuture<Void> commit = commitUnanswered(transaction);
        broker.send(new TxAbortedFrame(transaction.id(), ErrorCode.TRANSACTION_TIMED_OUT,
                "transaction 1 was open for 60000 ms, limit 60000 ms"));
        ExecutionException failed = assertThrows(ExecutionException.class, () -> commit.get(5, TimeUnit.SECONDS));
        SluiceException cause = assertInstanceOf(SluiceException.class, failed.getCause());
        assertEquals(ErrorCode.TRANSACTION_TIMED_OUT, cause.errorCode());
        assertTrue(cause.retriable());
    }

    @Test
    void shouldTimeOutACommitNobodyAnswersAndSayTheOutcomeIsUnknown() {
        broker.answerCommits = false;
        Transaction transaction = connection.transaction();
        transaction.publish("invoices", bytes("unanswered"));
        // Long enough for the TX_COMMIT to be written on a loaded machine: a deadline that passes before it is
        // written is the other outcome ("nothing was committed"), tested below.
        SluiceTimeoutException timeout = assertThrows(SluiceTimeoutException.class,
                () -> transaction.commit(Duration.ofMillis(1500)));
        TestWait.until(() -> broker.count(TxCommitFrame.class) == 1); // the commit was sent
        assertTrue(timeout.getMessage().contains("deadline of 1500 ms") && timeout.getMessage().contains("may or may not have committed"),
                timeout.getMessage());
        transaction.close();
        assertEquals(0, broker.count(TxRollbackFrame.class), "a commit in doubt is not rolled back");
    }

    @Test
    void shouldSayTheOutcomeIsUnknownWhenTheNetworkThreadDecidesLate() {
        broker.answerCommits = false;
        Transaction transaction = connection.transaction();
        transaction.publish("invoices", bytes("unanswered"));
        // A loaded machine: the network thread is busy from before the deadline until well after it, so its
        // verdict (the request's timeout) comes late. The caller must still get that verdict, not a guess.
        connection.scheduleOnLoop(connection.owing("the test's busy spell", "nothing", thrown -> { }, () -> {
            long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(800);
            while (System.nanoTime() < until) {
                Thread.onSpinWait(); // busy, as a starved thread is; not a wait for anything
            }
        }), TimeUnit.MILLISECONDS.toNanos(400));
        SluiceTimeoutException timeout = assertThrows(SluiceTimeoutException.class,
                () -> transaction.commit(Duration.ofMillis(500)));
        assertTrue(timeout.getMessage().contains("deadline of 500 ms") && timeout.getMessage().contains("may or may not have committed"),
                timeout.getMessage());
        assertEquals(1, broker.count(TxCommitFrame.class), "the commit was sent before the network thread fell behind");
    }

    @Test
    void shouldWaitForThePublishWindowBeforeCommittingAndRollBackWhenTheDeadlinePassesFirst() throws Exception {
        broker.publishWindowMessages = 2;
        connection.close();
        connection = connect();
        Transaction transaction = connection.transaction();
        for (int i = 0; i < 3; i++) {
            transaction.publish("invoices", bytes("m" + i));
        }
        CompletableFuture<Void> commit = transaction.commitAsync();
        TestWait.until(() -> broker.count(TxPublished.class) == 1);
        assertEquals(2, broker.frames(TxPublished.class).get(0).messages().size());
        broker.send(new PublishCreditFrame(2, 100));
        commit.get(5, TimeUnit.SECONDS);
        assertEquals(List.of(2, 1), broker.frames(TxPublished.class).stream().map(frame -> frame.messages().size()).toList());

        Transaction starved = connection.transaction();
        for (int i = 0; i < 3; i++) {
            starved.publish("invoices", bytes("w" + i));
        }
        SluiceTimeoutException timeout = assertThrows(SluiceTimeoutException.class,
                () -> starved.commit(Duration.ofMillis(200)));
        assertTrue(timeout.getMessage().contains("nothing was committed"), timeout.getMessage());
        TestWait.until(() -> broker.count(TxRollbackFrame.class) == 1);
        assertEquals(1, broker.count(TxCommitFrame.class), "only the first transaction's commit was sent");
    }

    @Test
    void shouldFailAnOpenTransactionWhenTheConnectionIsLostAndNeverReplayIt() throws Exception {
        Transaction transaction = connection.transaction();
        for (int i = 0; i < Transaction.MAX_BATCH_MESSAGES; i++) {
            transaction.publish("invoices", bytes("m" + i));
        }
        TestWait.until(() -> broker.count(TxPublished.class) == 1);
        broker.dropConnections();
        ConnectionLostException lost = assertInstanceOf(ConnectionLostException.class,
                awaitFailure(() -> transaction.publish("invoices", bytes("after"))));
        assertTrue(lost.getMessage().contains("rolls back"), lost.getMessage());
        assertSame(lost, assertThrows(ConnectionLostException.class, transaction::commit));
        TestWait.until(() -> broker.count(HelloFrame.class) == 2);
        TestWait.until(connection::isConnected);
        connection.purgeQueue("orders");
        assertEquals(1, broker.count(TxBeginFrame.class), "nothing of the transaction is sent again");
        assertEquals(0, broker.count(TxCommitFrame.class));
    }

    @Test
    void shouldSayACommitInFlightWhenTheConnectionIsLostMayHaveCommitted() throws Exception {
        CompletableFuture<Void> commit = commitUnanswered(connection.transaction());
        broker.dropConnections();
        ExecutionException failed = assertThrows(ExecutionException.class, () -> commit.get(5, TimeUnit.SECONDS));
        ConnectionLostException cause = assertInstanceOf(ConnectionLostException.class, failed.getCause());
        assertTrue(cause.getMessage().contains("may or may not have committed"), cause.getMessage());
    }

    @Test
    void shouldRefuseAMessageReceivedOnAnotherConnection() throws Exception {
        try (Connection other = connect()) {
            Consumer foreign = other.subscribe("orders", ConsumerOptions.DEFAULT);
            TestWait.until(() -> broker.count(SubscribeFrame.class) == 1);
            broker.deliver(foreign.consumerTag(), 9);
            Message message = foreign.receive(Duration.ofSeconds(5));
            assertNotNull(message);
            Transaction transaction = connection.transaction();
            assertThrows(IllegalArgumentException.class, () -> transaction.ack(message));
            message.ack(); // still the other connection's to settle
        }
    }

    /** Publishes one message and commits, the broker keeping its answer back; returns once TX_COMMIT arrived. */
    private CompletableFuture<Void> commitUnanswered(Transaction transaction) {
        broker.answerCommits = false;
        transaction.publish("invoices", bytes("unanswered"));
        CompletableFuture<Void> commit = transaction.commitAsync();
        TestWait.until(() -> broker.count(TxCommitFrame.class) == 1);
        return commit;
    }

    /** The transaction frames the broker received, in order. */
    private List<Object> transactionFrames() {
        List<Object> frames = new ArrayList<>();
        for (Object frame : broker.received) {
            if (frame instanceof TxBeginFrame || frame instanceof TxPublished || frame instanceof TxAckFrame
                    || frame instanceof TxCommitFrame || frame instanceof TxRollbackFrame) {
                frames.add(frame);
            }
        }
        return frames;
    }

    private List<Message> receive(Consumer consumer, long... ids) throws InterruptedException {
        broker.deliver(consumer.consumerTag(), ids);
        Map<Long, Message> messages = new LinkedHashMap<>();
        for (int i = 0; i < ids.length; i++) {
            Message message = consumer.receive(Duration.ofSeconds(5));
            assertNotNull(message, "message " + i);
            messages.put(message.id(), message);
        }
        return List.copyOf(messages.values());
    }

    /** Repeats {@code call} until it throws, as it does once the network thread has seen the failure. */
    private static SluiceException awaitFailure(Runnable call) {
        SluiceException[] failure = new SluiceException[1];
        TestWait.until(() -> {
            try {
                call.run();
                return false;
            } catch (SluiceException e) {
                failure[0] = e;
                return true;
            }
        });
        return failure[0];
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
