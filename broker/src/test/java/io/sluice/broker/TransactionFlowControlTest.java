package io.sluice.broker;

import io.sluice.broker.queue.QueueSnapshot;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FlowFrame;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.TxAbortedFrame;
import io.sluice.protocol.TxBeginFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxPublishFrame;
import io.sluice.protocol.TxRollbackFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A transactional publish obeys a queue's backlog quotas as a plain one does (docs/flow-control.md,
 * "Transactions"), in raw frames: the connection that staged messages is told the queue's FLOW state,
 * its publish window comes back at the consumers' pace while the queue is slowed, a message over the
 * hard quota is refused with the plain publish's reason, and a commit is never refused by the quota.
 */
class TransactionFlowControlTest {
    @TempDir
    Path dir;

    private static void declare(RawClient c, String queue, QueueSettings settings) throws InterruptedException {
        c.send(new DeclareQueueFrame(1, queue, settings));
        c.expect(OkFrame.class);
    }

    private static void txPublish(RawClient c, long txn, String queue, int count) {
        PublishFrameBuilder b = new PublishFrameBuilder(c.alloc(), queue);
        for (int i = 0; i < count; i++) {
            b.add(0, 0, List.of(), ("t" + i).getBytes(StandardCharsets.UTF_8));
        }
        c.send(new TxPublishFrame(txn, b.build()));
    }

    private static PublishFrameBuilder plain(RawClient c, String queue, long firstSequence, int count) {
        PublishFrameBuilder b = new PublishFrameBuilder(c.alloc(), queue);
        for (int i = 0; i < count; i++) {
            b.add(0x7F_0001L, firstSequence + i, List.of(), ("p" + i).getBytes(StandardCharsets.UTF_8));
        }
        return b;
    }

    private static QueueSnapshot snapshot(Broker broker, String queue) throws Exception {
        return broker.queues().get(queue).snapshot().get(10, TimeUnit.SECONDS);
    }

    @Test
    void aTransactionalPublishToASlowedQueueGetsItsWindowBackOnlyAsConsumersAcknowledge() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port());
             RawClient consumer = RawClient.connected(broker.port())) {
            declare(c, "q", QueueSettings.builder().set(QueueSettings.QUOTA_SOFT_MESSAGES, 5)
                    .set(QueueSettings.QUOTA_HARD_MESSAGES, 1000).build());
            c.send(plain(c, "q", 1, 4).build());
            c.expect(ConfirmFrame.class);
            TestAwait.until("the plain publish's window back", () -> c.publishCredit.get() == 4);

            c.send(new TxBeginFrame(1, 0));
            txPublish(c, 1, "q", 3); // 7 stored: over the soft quota of 5
            FlowFrame flow = c.expect(FlowFrame.class);
            assertEquals(FlowState.SLOWED, flow.state(), "the transaction's publisher is told, as a plain publisher is");
            assertEquals("q", flow.queue());
            c.send(new TxCommitFrame(9, 1));
            assertEquals(9, c.expect(OkFrame.class).requestId(), "the quota never refuses a commit");
            assertEquals(4, c.publishCredit.get(), "while slowed, a staged message's window waits for a consumer's ack");

            consumer.send(new SubscribeFrame(2, 3, "q", 10));
            consumer.expect(OkFrame.class);
            List<RawClient.Delivery> got = consumer.deliveries(7);
            consumer.send(new AckFrame(3, List.of(IdRange.single(got.get(0).id()))));
            TestAwait.until("the staged messages' window back after an ack", () -> c.publishCredit.get() == 7);
            consumer.send(new AckFrame(3, List.of(new IdRange(got.get(1).id(), got.get(6).id()))));
            TestAwait.until("the backlog drained", () -> broker.queues().get("q").messageCount() == 0);
            QueueSnapshot s = snapshot(broker, "q");
            assertEquals(0, s.backlogBytes(), "each staged message counted once in the backlog's bytes, and left it once");
            assertEquals(FlowState.FREE, s.flowState());
        }
    }

    @Test
    void aTransactionalPublishOverTheHardQuotaIsRefusedWithThePlainPublishsReason() throws Exception {
        // A blocked queue stores what was in flight up to a publish window past its hard level (A2): 4 here.
        try (Broker broker = TestBrokers.start(dir, Map.of("broker.publish-window-messages", "4"));
             RawClient c = RawClient.connected(broker.port()); RawClient other = RawClient.connected(broker.port())) {
            declare(c, "r", QueueSettings.builder().set(QueueSettings.QUOTA_HARD_MESSAGES, 3).build());
            c.send(new TxBeginFrame(1, 0));
            txPublish(c, 1, "r", 3);
            FlowFrame flow = c.expect(FlowFrame.class);
            assertEquals(FlowState.BLOCKED, flow.state(), "the transaction's publisher is told the queue is blocked");
            assertEquals("r", flow.queue());

            other.send(plain(other, "r", 1, 4).build()); // in flight when it was blocked: stored
            // A new publisher is told the queue's state first when it is not FREE (docs/flow-control.md).
            assertEquals(FlowState.BLOCKED, other.expect(FlowFrame.class).state());
            other.expect(ConfirmFrame.class);
            other.send(plain(other, "r", 5, 1).build());
            PublishErrorFrame plainRefusal = other.expect(PublishErrorFrame.class);
            assertEquals(ErrorCode.QUEUE_BLOCKED.code(), plainRefusal.code());

            c.send(new TxBeginFrame(2, 0));
            txPublish(c, 2, "r", 1);
            TxAbortedFrame aborted = c.expect(TxAbortedFrame.class);
            assertEquals(2, aborted.txnId());
            assertEquals(ErrorCode.TRANSACTION_ABORTED.code(), aborted.code());
            assertTrue(aborted.message().contains("QUEUE_BLOCKED") && aborted.message().contains(plainRefusal.message()),
                    aborted.message() + " | " + plainRefusal.message());
            c.send(new TxRollbackFrame(8, 2));
            assertEquals(8, c.expect(OkFrame.class).requestId());
            TestAwait.until("every window back", () -> c.publishCredit.get() == 4);

            c.send(new TxCommitFrame(9, 1));
            assertEquals(9, c.expect(OkFrame.class).requestId(), "a commit adds nothing the quota did not admit");
            assertEquals(7, broker.queues().get("r").messageCount());
        }
    }
}
