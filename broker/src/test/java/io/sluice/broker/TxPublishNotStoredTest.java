package io.sluice.broker;

import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.HeartbeatFrame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.TxAbortedFrame;
import io.sluice.protocol.TxBeginFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxPublishFrame;
import io.sluice.storage.QueueStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.sluice.broker.TransactionFrames.count;
import static io.sluice.broker.TransactionFrames.declare;
import static io.sluice.broker.TransactionFrames.publish;
import static io.sluice.broker.TransactionFrames.sendInOneWrite;
import static io.sluice.broker.TransactionFrames.txPublish;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A TX_PUBLISH that can be no part of its transaction is refused on the connection's loop, before its queue stores
 * anything: its client is told why, with a code and a sentence naming the transaction, and gets its window back.
 * Before (found by a review), it went to its queue, was written to disk there, and was then discarded: disk churn for
 * nothing, and, for a transaction the broker had rolled back, no word to the client at all.
 */
class TxPublishNotStoredTest {
    private static final int MESSAGES = 2000;

    @TempDir
    Path dir;

    @Test
    void aTxPublishToATransactionTheBrokerRolledBackIsRefusedAndNotWritten() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            declare(c, "invoices");
            QueueStore invoices = broker.queues().get("invoices").store();
            c.send(new TxBeginFrame(3, 200));
            assertEquals(ErrorCode.TRANSACTION_TIMED_OUT, c.expect(TxAbortedFrame.class).errorCode());
            long written = invoices.writtenIndex();
            long creditBefore = c.publishCredit.get();

            txPublish(c, 3, "invoices", "late");
            TestAwait.until("the window of the refused TX_PUBLISH back", () -> c.publishCredit.get() == creditBefore + 1);
            assertEquals(written, invoices.writtenIndex(), "the refused TX_PUBLISH was written to the queue");
            ErrorFrame refused = c.expect(ErrorFrame.class);
            assertEquals(0, refused.requestId());
            assertEquals(ErrorCode.TRANSACTION_TIMED_OUT.code(), refused.code());
            assertTrue(refused.message().contains("transaction 3 of") && refused.message().contains("'invoices'")
                    && refused.message().contains("timeout of 200 ms"), refused.message());

            c.send(new TxCommitFrame(4, 3)); // the transaction still answers its commit with the first reason
            ErrorFrame commit = c.expect(ErrorFrame.class);
            assertEquals(4, commit.requestId());
            assertEquals(ErrorCode.TRANSACTION_TIMED_OUT.code(), commit.code());
            assertEquals(0, count(c, "invoices"));
        }
    }

    @Test
    void aTxPublishAfterTheTxCommitIsRefusedAndNotWritten() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            declare(c, "invoices");
            QueueStore invoices = broker.queues().get("invoices").store();
            long written = invoices.writtenIndex();
            // In one write, behind a TX_PUBLISH large enough that the loop reads the last frame while the commit waits for it.
            PublishFrameBuilder big = new PublishFrameBuilder(c.alloc(), "invoices");
            for (int i = 0; i < MESSAGES; i++) {
                big.add(0, 0, List.of(), ("invoice-" + i).getBytes(StandardCharsets.UTF_8));
            }
            PublishFrameBuilder late = new PublishFrameBuilder(c.alloc(), "invoices");
            late.add(0, 0, List.of(), "late".getBytes(StandardCharsets.UTF_8));
            sendInOneWrite(c, new TxBeginFrame(1, 0), new TxPublishFrame(1, big.build()), new TxCommitFrame(9, 1),
                    new TxPublishFrame(1, late.build()));

            List<Object> answers = answers(c, 2); // either order: they come from different threads
            ErrorFrame refused = one(answers, ErrorFrame.class);
            assertEquals(0, refused.requestId());
            assertEquals(ErrorCode.UNKNOWN_TRANSACTION.code(), refused.code());
            assertTrue(refused.message().contains("transaction 1 of") && refused.message().contains("after its TX_COMMIT"),
                    refused.message());
            assertEquals(9, one(answers, OkFrame.class).requestId());
            assertEquals(MESSAGES, count(c, "invoices"));
            TestAwait.until("every window back", () -> c.publishCredit.get() == MESSAGES + 1);
            // The commit's messages and its commit record (T5), nothing else.
            assertEquals(written + MESSAGES + 1, invoices.writtenIndex(), "the TX_PUBLISH after the TX_COMMIT was written");
        }
    }

    /**
     * A TX_PUBLISH that puts its transaction over {@code transactions.max-bytes} is refused before its queue's quota
     * admits it: drop-oldest makes no room for it. Before (found by a review), the queue admitted and stored it, dropping
     * a visible message for it, and the coordinator refused the frame after that; on a cluster node its window came back
     * and the queue counted it as uncommitted before the cap was checked.
     */
    @Test
    void aTxPublishOverTheTransactionsBytesIsRefusedBeforeDropOldestMakesRoomForIt() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of("transactions.max-bytes", "100"));
             RawClient c = RawClient.connected(broker.port())) {
            c.send(new DeclareQueueFrame(1, "invoices", QueueSettings.builder().quotaMessages(0, 2).overflowPolicy("drop-oldest").build()));
            c.expect(OkFrame.class);
            long creditBefore = c.publishCredit.get();
            publish(c, "invoices", "old", "new"); // the backlog at its hard level of 2: a message more drops "old"
            QueueStore invoices = broker.queues().get("invoices").store();
            long written = invoices.writtenIndex();

            c.send(new TxBeginFrame(1, 0));
            txPublish(c, 1, "invoices", "x".repeat(200));
            TxAbortedFrame over = c.expect(TxAbortedFrame.class);
            assertEquals(ErrorCode.TRANSACTION_LIMIT, over.errorCode());
            assertTrue(over.message().contains("transaction 1 of") && over.message().contains("transactions.max-bytes 100"),
                    over.message());
            TestAwait.until("the windows of the publish and of the refused TX_PUBLISH back",
                    () -> c.publishCredit.get() == creditBefore + 3);
            assertEquals(2, count(c, "invoices"), "a visible message was dropped to make room for a refused TX_PUBLISH");
            assertEquals(written, invoices.writtenIndex(), "the refused TX_PUBLISH was written to the queue");
        }
    }

    /** The next {@code n} frames but heartbeats. */
    private static List<Object> answers(RawClient c, int n) throws InterruptedException {
        List<Object> answers = new ArrayList<>();
        while (answers.size() < n) {
            Object o = c.received.poll(10, TimeUnit.SECONDS);
            if (!(o instanceof HeartbeatFrame)) {
                answers.add(o);
            }
        }
        return answers;
    }

    private static <T> T one(List<Object> answers, Class<T> type) {
        return answers.stream().filter(type::isInstance).map(type::cast).findFirst()
                .orElseThrow(() -> new AssertionError("no " + type.getSimpleName() + " among " + answers));
    }

}
