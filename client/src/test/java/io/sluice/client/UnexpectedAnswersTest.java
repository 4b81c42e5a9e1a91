package io.sluice.client;

import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.DeleteQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.Frame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.ProducerInitFrame;
import io.sluice.protocol.ProducerOkFrame;
import io.sluice.protocol.PurgeQueueFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxRollbackFrame;
import io.sluice.protocol.UnsubscribeFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each request accepts one type of answer, ERROR aside: OK, or PRODUCER_OK for a PRODUCER_INIT. Any other frame under
 * its request id fails the request at once with a protocol error naming the request, the type expected and the type
 * received (SluiceException UNEXPECTED_FRAME), and the client closes the connection, as for any frame that breaks the
 * protocol. Were the request completed with whatever frame came, the caller's code would cast it and fail with a
 * ClassCastException (a declare, a named producer's registration), or take it for success (a SUBSCRIBE, an
 * UNSUBSCRIBE, a TX_COMMIT or TX_ROLLBACK answered with PRODUCER_OK).
 */
class UnexpectedAnswersTest {
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);
    /** How long "at once" may take: a tenth of the request timeout. */
    private static final long BOUND_MS = REQUEST_TIMEOUT.toMillis() / 10;

    private final FakeBroker broker = new FakeBroker();
    private Connection connection;

    @BeforeEach
    void connect() {
        connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .requestTimeout(REQUEST_TIMEOUT).reconnectPolicy(ReconnectPolicy.DISABLED).build());
    }

    @AfterEach
    void stop() {
        connection.close();
        broker.close();
    }

    @Test
    void aDeclareAnsweredWithProducerOkFailsAndTheConnectionCloses() {
        answer(DeclareQueueFrame.class, DeclareQueueFrame::requestId, UnexpectedAnswersTest::producerOk);
        assertUnexpected(failureOf(connection.declareQueueAsync("orders", QueueSettings.EMPTY)),
                "DECLARE_QUEUE orders", "OK", "PRODUCER_OK");
    }

    @Test
    void aDeleteAnsweredWithProducerOkFailsAndTheConnectionCloses() {
        answer(DeleteQueueFrame.class, DeleteQueueFrame::requestId, UnexpectedAnswersTest::producerOk);
        assertUnexpected(failureOf(connection.deleteQueueAsync("orders")), "DELETE_QUEUE orders", "OK", "PRODUCER_OK");
    }

    @Test
    void aPurgeAnsweredWithProducerOkFailsAndTheConnectionCloses() {
        answer(PurgeQueueFrame.class, PurgeQueueFrame::requestId, UnexpectedAnswersTest::producerOk);
        assertUnexpected(failureOf(connection.purgeQueueAsync("orders")), "PURGE_QUEUE orders", "OK", "PRODUCER_OK");
    }

    @Test
    void aSubscribeAnsweredWithProducerOkFailsAndTheConnectionCloses() {
        answer(SubscribeFrame.class, SubscribeFrame::requestId, UnexpectedAnswersTest::producerOk);
        assertUnexpected(failureOf(CompletableFuture.supplyAsync(() -> connection.subscribe("orders", ConsumerOptions.DEFAULT))),
                "SUBSCRIBE orders", "OK", "PRODUCER_OK");
    }

    /** Consumer.close() returns (it says nothing of its UNSUBSCRIBE's answer); the connection closes. */
    @Test
    void anUnsubscribeAnsweredWithProducerOkClosesTheConnection() throws Exception {
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
        answer(UnsubscribeFrame.class, UnsubscribeFrame::requestId, UnexpectedAnswersTest::producerOk);
        CompletableFuture.runAsync(consumer::close).get(BOUND_MS, TimeUnit.MILLISECONDS);
        TestWait.until(() -> !connection.isConnected());
    }

    @Test
    void aNamedProducersRegistrationAnsweredWithOkFailsAndTheConnectionCloses() {
        answer(ProducerInitFrame.class, ProducerInitFrame::requestId, OkFrame::new);
        assertUnexpected(failureOf(CompletableFuture.supplyAsync(
                        () -> connection.createProducer("orders", ProducerOptions.DEFAULT.withName("billing")))),
                "PRODUCER_INIT", "PRODUCER_OK", "OK");
    }

    /** The commit's outcome is unknown: it fails, saying what came, as a commit whose connection was lost does. */
    @Test
    void aCommitAnsweredWithProducerOkFailsAndTheConnectionCloses() {
        answer(TxCommitFrame.class, TxCommitFrame::requestId, UnexpectedAnswersTest::producerOk);
        Transaction transaction = connection.transaction();
        transaction.publish("invoices", new byte[] {1});
        assertUnexpected(failureOf(transaction.commitAsync()), "TX_COMMIT of transaction", "OK", "PRODUCER_OK");
    }

    @Test
    void aRollbackAnsweredWithProducerOkFailsAndTheConnectionCloses() {
        answer(TxRollbackFrame.class, TxRollbackFrame::requestId, UnexpectedAnswersTest::producerOk);
        Transaction transaction = connection.transaction();
        for (int i = 0; i < Transaction.MAX_BATCH_MESSAGES; i++) {
            transaction.publish("invoices", new byte[] {1});
        }
        TestWait.until(() -> broker.count(FakeBroker.TxPublished.class) == 1); // begun: the rollback goes to the broker
        assertUnexpected(failureOf(transaction.rollbackAsync()), "TX_ROLLBACK of transaction", "OK", "PRODUCER_OK");
    }

    /**
     * A frame only a client sends (CREDIT) coming from the broker breaks the protocol as a frame of an unknown type does:
     * the client closes the connection, rather than log the frame and ignore it.
     */
    @Test
    void aFrameOnlyAClientSendsClosesTheConnection() {
        broker.send(new io.sluice.protocol.CreditFrame(1, 10));
        TestWait.until(() -> !connection.isConnected());
        assertFalse(connection.isConnected(), "a CREDIT from the broker ends the connection");
    }

    /** The fake broker answers each request of type {@code type} with what {@code answer} makes of its request id. */
    private <R extends Frame> void answer(Class<R> type, Function<R, Long> requestId, Function<Long, Frame> answer) {
        broker.answerInstead = frame -> type.isInstance(frame) ? answer.apply(requestId.apply(type.cast(frame))) : null;
    }

    private static Frame producerOk(long requestId) {
        return new ProducerOkFrame(requestId, 1, 1, 0);
    }

    /** {@code failure} names the request, the type expected and the one received; the connection closed. */
    private void assertUnexpected(Throwable failure, String request, String expected, String received) {
        UnexpectedAnswerException unexpected = assertInstanceOf(UnexpectedAnswerException.class, failure, String.valueOf(failure));
        assertEquals(ErrorCode.UNEXPECTED_FRAME, unexpected.errorCode(), unexpected.toString());
        assertEquals(expected, unexpected.expected().name());
        assertEquals(received, unexpected.received().name());
        String message = unexpected.getMessage();
        assertTrue(message.contains(request) && message.contains("answered with " + received)
                && message.contains("expected " + expected), message);
        TestWait.until(() -> !connection.isConnected()); // closed, as for a frame of an unknown type
    }

    private static Throwable failureOf(CompletableFuture<?> call) {
        return assertThrows(ExecutionException.class, () -> call.get(BOUND_MS, TimeUnit.MILLISECONDS)).getCause();
    }
}
