package io.sluice.broker.txn;

import io.netty.util.concurrent.DefaultEventExecutor;
import io.netty.util.concurrent.EventExecutor;
import io.sluice.broker.Broker;
import io.sluice.broker.TestAwait;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.IdRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A transaction is forgotten by its connection before its client hears that it ended, for every ending: a client that
 * reacts to the answer at once (begins its next transaction, under a new id or the same one) must find the id and its
 * place under {@code transactions.max-open-per-connection} free, as it does after an OK to TX_COMMIT (rule "answer
 * from the last part" of the coordinator). Before, a commit refused because the broker had rolled the transaction
 * back was answered first and forgotten after, so a TX_BEGIN the loop read in between was refused with
 * TRANSACTION_LIMIT at the cap, or, under the same id, ignored without an answer.
 *
 * <p>The link's answer stands for the client's reaction: it has the loop take the next TX_BEGIN before the
 * coordinator's thread goes on, which is the order a preempted coordinator thread gives.
 */
class EndedTransactionForgottenBeforeItsAnswerTest {
    @TempDir
    Path dir;

    @Test
    void aTransactionBegunAtOnceOnARefusedCommitIsNotOverTheConnectionsCap() throws Exception {
        try (Broker broker = start(); Link link = new Link()) {
            ConnectionTransactions owner = broker.transactions().forConnection(link);
            link.reaction = () -> owner.begin(2, 0);
            commitARolledBackTransaction(broker, link, owner);

            assertEquals(List.of("TX_ABORTED 1 TRANSACTION_ABORTED", "ERROR 9 TRANSACTION_ABORTED"), link.frames,
                    "transaction 2, begun as the commit of 1 was refused, was refused in turn");
            assertEquals(1, owner.size(), "transaction 2 is open");
        }
    }

    @Test
    void aTransactionBegunAtOnceUnderTheIdOfOneWhoseCommitWasRefusedIsOpen() throws Exception {
        try (Broker broker = start(); Link link = new Link()) {
            ConnectionTransactions owner = broker.transactions().forConnection(link);
            link.reaction = () -> owner.begin(1, 0);
            commitARolledBackTransaction(broker, link, owner);

            assertEquals(List.of("TX_ABORTED 1 TRANSACTION_ABORTED", "ERROR 9 TRANSACTION_ABORTED"), link.frames);
            assertEquals(1, owner.size(), "the new transaction 1 was not begun, and nothing told its client");
        }
    }

    /** Transaction 1 is rolled back by the broker (a refused TX_PUBLISH), then committed: refused, and the link reacts. */
    private static void commitARolledBackTransaction(Broker broker, Link link, ConnectionTransactions owner) throws Exception {
        link.loop.submit(() -> {
            owner.begin(1, 0);
            owner.refuse(1, "TX_PUBLISH", ErrorCode.ACCESS_DENIED, "denied by the test");
        }).sync();
        TestAwait.until("TX_ABORTED for transaction 1", Duration.ofSeconds(10), () -> link.frames.size() == 1);
        link.loop.submit(() -> owner.commit(9, 1)).sync();
        TestAwait.until("the answer to the commit", Duration.ofSeconds(10), () -> link.frames.stream().anyMatch(f -> f.startsWith("ERROR 9")));
        broker.transactions().executor().submit(() -> { }).sync(); // the commit's turn is over
        link.loop.submit(() -> { }).sync();
    }

    private Broker start() {
        return Broker.start(new ConfigLoader().load(null, Map.of("broker.data-dir", dir.toString(), "broker.port", "0", "metrics.port", "0",
                "storage.reserved-disk-bytes", "67108864", "transactions.max-open-per-connection", "1")));
    }

    /**
     * A connection that records what the coordinator tells it; its ERROR to a request first runs {@link #reaction} on
     * its loop, and waits for it, as a client that answered at once and a loop that read that answer would.
     */
    private final class Link implements TransactionLink, AutoCloseable {
        final DefaultEventExecutor loop = new DefaultEventExecutor();
        final List<String> frames = new CopyOnWriteArrayList<>();
        volatile Runnable reaction;

        @Override
        public void transactionAborted(long txnId, ErrorCode code, String message) {
            frames.add("TX_ABORTED " + txnId + " " + code);
        }

        @Override
        public void answerOk(long requestId) {
            frames.add("OK " + requestId);
        }

        @Override
        public void answerError(long requestId, ErrorCode code, String message) {
            if (requestId != 0 && reaction != null) {
                loop.submit(reaction).syncUninterruptibly();
            }
            frames.add("ERROR " + requestId + " " + code);
        }

        @Override
        public EventExecutor loop() {
            return loop;
        }

        @Override
        public void confirm(long producerId, List<IdRange> sequences) {
        }

        @Override
        public void refuse(long producerId, IdRange sequences, ErrorCode code, String message) {
        }

        @Override
        public void publishCredit(int messages, long windowBytes, long heldBytes) {
        }

        @Override
        public int windowBytes(int headersLength, int payloadLength) {
            return headersLength + payloadLength;
        }

        @Override
        public void flow(String queue, FlowState state, String reason) {
        }

        @Override
        public void flush() {
        }

        @Override
        public String describe() {
            return "test connection";
        }

        @Override
        public String id() {
            return "test";
        }

        @Override
        public boolean isActive() {
            return true;
        }

        @Override
        public void close() {
            loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}
