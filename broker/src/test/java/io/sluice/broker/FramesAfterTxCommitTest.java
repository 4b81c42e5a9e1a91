package io.sluice.broker;

import io.netty.util.concurrent.EventExecutor;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.HeartbeatFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishCreditFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.TxAckFrame;
import io.sluice.protocol.TxBeginFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxPublishFrame;
import io.sluice.protocol.TxRollbackFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static io.sluice.broker.TransactionFrames.count;
import static io.sluice.broker.TransactionFrames.declare;
import static io.sluice.broker.TransactionFrames.ordersDelivered;
import static io.sluice.broker.TransactionFrames.sendInOneWrite;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The broker handles a connection's frames in order: a TX_ROLLBACK, a TX_PUBLISH the session refuses, or a second
 * TX_COMMIT, that follows a TX_COMMIT of the same transaction does not undo or overtake that commit. The loop hands a
 * TX_COMMIT over only once the stagings before it completed; before, such a frame was handed over at once: the
 * transaction was rolled back first and the commit sent before it answered TRANSACTION_ABORTED, or the second TX_COMMIT
 * was the one answered OK and the first refused. Here the TX_COMMIT follows a TX_PUBLISH of 2000 messages, all in one
 * write, so that the loop reads it, and the frame after it, while that staging is under way.
 */
class FramesAfterTxCommitTest {
    private static final int MESSAGES = 2000;

    @TempDir
    Path dir;

    @Test
    void aTxRollbackAfterTheTxCommitIsRefusedAndTheCommitGoesAhead() throws Exception {
        assertCommitGoesAheadDespite(c -> new TxRollbackFrame(5, 1), "ERROR 5 UNKNOWN_TRANSACTION");
    }

    @Test
    void aRefusedTxPublishAfterTheTxCommitIsNotPartOfItAndTheCommitGoesAhead() throws Exception {
        assertCommitGoesAheadDespite(c -> {
            PublishFrameBuilder toNoQueue = new PublishFrameBuilder(c.alloc(), "nosuch");
            toNoQueue.add(0, 0, List.of(), "x".getBytes(StandardCharsets.UTF_8));
            return new TxPublishFrame(1, toNoQueue.build());
        }, "ERROR 0 UNKNOWN_TRANSACTION");
    }

    @Test
    void aSecondTxCommitIsRefusedAndTheFirstIsTheOneAnswered() throws Exception {
        assertCommitGoesAheadDespite(c -> new TxCommitFrame(10, 1), "ERROR 10 UNKNOWN_TRANSACTION");
    }

    /**
     * A TX_ACK after the TX_COMMIT is no part of the commit, whenever it completes: it is refused ("is committing") and
     * the delivery it names goes back to its queue, as a TX_ACK's of no open transaction does. Before (found by a
     * review), it was part of the commit if its hold completed before the commit's record was built, which the
     * commit, waiting for its TX_PUBLISH, let it do: o1 was acknowledged by a commit sent before its TX_ACK. Here the
     * target queue's executor is held until the TX_ACK's hold has been taken in, so the commit waits every time.
     */
    @Test
    void aTxAckAfterTheTxCommitIsNotPartOfIt() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of("broker.io-threads", "3"));
             RawClient c = RawClient.connected(broker.port())) {
            long o1 = ordersDelivered(c).get(0).id();
            EventExecutor ordersLoop = broker.queues().get("orders").executor();
            EventExecutor connectionLoop = TestBrokers.servedChannel(broker, c).eventLoop();
            String target = null;
            for (int i = 0; target == null; i++) { // a queue whose executor is neither the connection's nor "orders"'
                declare(c, "target" + i);
                EventExecutor loop = broker.queues().get("target" + i).executor();
                target = loop != ordersLoop && loop != connectionLoop ? "target" + i : null;
            }
            CountDownLatch release = new CountDownLatch(1);
            TestAwait.hold(broker.queues().get(target).executor(), release);
            try {
                PublishFrameBuilder b = new PublishFrameBuilder(c.alloc(), target);
                b.add(0, 0, List.of(), "i1".getBytes(StandardCharsets.UTF_8));
                sendInOneWrite(c, new TxBeginFrame(1, 0), new TxPublishFrame(1, b.build()), new TxCommitFrame(9, 1),
                        new TxAckFrame(1, 7, List.of(IdRange.single(o1))));
                TestAwait.until("the TX_BEGIN read", () -> broker.transactions().open() == 1);
                connectionLoop.submit(() -> { }).get(10, TimeUnit.SECONDS); // the frames read with it are handled
                ordersLoop.submit(() -> { }).get(10, TimeUnit.SECONDS); // the TX_ACK's hold is done
                broker.transactions().drain(10_000); // and taken in, if it is to be
            } finally {
                release.countDown();
            }
            TestAwait.until("the commit done", () -> broker.transactions().counts().commits() == 1);
            try (RawClient other = RawClient.connected(broker.port())) {
                assertEquals(2, count(other, "orders"), "a TX_ACK sent after the TX_COMMIT was acknowledged by that commit");
                assertEquals(1, count(other, target));
            }
            assertEquals(List.of("ERROR 0 UNKNOWN_TRANSACTION", "OK 9"), answers(c, 2));
        }
    }

    /** TX_COMMIT(9) of a transaction staging {@link #MESSAGES} messages, then {@code after}: answered {@code refusal} and OK 9. */
    private void assertCommitGoesAheadDespite(Function<RawClient, Frame> after, String refusal) throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            declare(c, "invoices");
            sendInOneWrite(c, new TxBeginFrame(1, 0), bigPublish(c), new TxCommitFrame(9, 1), after.apply(c));

            assertEquals(List.of(refusal, "OK 9"), answers(c, 2));
            assertEquals(MESSAGES, count(c, "invoices"));
        }
    }

    private static TxPublishFrame bigPublish(RawClient c) {
        PublishFrameBuilder b = new PublishFrameBuilder(c.alloc(), "invoices");
        for (int i = 0; i < MESSAGES; i++) {
            b.add(0, 0, List.of(), ("invoice-" + i).getBytes(StandardCharsets.UTF_8));
        }
        return new TxPublishFrame(1, b.build());
    }


    /** The next {@code n} answers (heartbeats, PUBLISH_CREDIT and deliveries aside), sorted. */
    private static List<String> answers(RawClient c, int n) throws InterruptedException {
        List<String> answers = new ArrayList<>();
        while (answers.size() < n) {
            Object o = c.received.poll(10, TimeUnit.SECONDS);
            if (o instanceof ErrorFrame e) {
                answers.add("ERROR " + e.requestId() + " " + e.errorCode());
            } else if (o instanceof OkFrame ok) {
                answers.add("OK " + ok.requestId());
            } else if (o == null || !(o instanceof HeartbeatFrame || o instanceof PublishCreditFrame || o instanceof RawClient.Delivery)) {
                answers.add(String.valueOf(o));
            }
        }
        answers.sort(null);
        return answers;
    }
}
