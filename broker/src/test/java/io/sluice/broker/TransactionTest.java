package io.sluice.broker;

import io.sluice.protocol.AckFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PurgeQueueFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.TxAbortedFrame;
import io.sluice.protocol.TxAckFrame;
import io.sluice.protocol.TxBeginFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxRollbackFrame;
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
import static io.sluice.broker.TransactionFrames.ordersDelivered;
import static io.sluice.broker.TransactionFrames.payloads;
import static io.sluice.broker.TransactionFrames.publish;
import static io.sluice.broker.TransactionFrames.range;
import static io.sluice.broker.TransactionFrames.txPublish;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Local transactions over a real socket, in raw frames so that every frame and answer is the test's:
 * a commit makes its publishes to several queues and its acknowledgements visible at once, a rollback
 * (asked, by timeout, by a closed connection, by a refused operation) none of it, across a restart too;
 * bad input gets its code and sentence, and nothing partial becomes visible.
 */
class TransactionTest {
    @TempDir
    Path dir;

    @Test
    void helloOkGrantsTransactionsToAClientThatAskedAndTxFramesAreServedEitherWay() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient asking = new RawClient(broker.port());
             RawClient old = new RawClient(broker.port())) {
            // HELLO by hand, flags 0x81: TRANSACTIONS and a capability this broker does not know.
            io.netty.buffer.ByteBuf hello = asking.alloc().buffer();
            hello.writeInt(0).writeByte(0x01).writeByte(0x81).writeShort(1).writeShort(1).writeShort(1).writeByte('t')
                    .writeInt(0).writeInt(0).writeShort(0).writeShort(0);
            hello.setInt(0, hello.readableBytes() - 4);
            asking.sendRaw(hello);
            io.sluice.protocol.HelloOkFrame granted = asking.expect(io.sluice.protocol.HelloOkFrame.class);
            assertEquals(0x01, granted.capabilities(), "TRANSACTIONS granted, the unknown bit ignored rather than refused");
            assertTrue(granted.grantsTransactions());

            // A client that did not ask (one from before the capability) is granted nothing, and still served.
            old.send(new io.sluice.protocol.HelloFrame(1, 1, "old", 1 << 20, 0, "", ""));
            assertEquals(0, old.expect(io.sluice.protocol.HelloOkFrame.class).capabilities());
            declare(old, "invoices");
            old.send(new TxBeginFrame(1, 0));
            txPublish(old, 1, "invoices", "i1");
            old.send(new TxCommitFrame(9, 1));
            assertEquals(9, old.expect(OkFrame.class).requestId());
            assertEquals(1, count(old, "invoices"));
        }
    }

    /**
     * Rule "force what is awaited" (docs/storage.md): a transaction's staged messages wait for no one, so the group commit
     * does not force them on their own; its commit record (T5), appended after them in the same queue, is awaited, and one
     * force makes both durable. On main the flusher forced the staged messages as soon as they were written, then the
     * queue again for the record: two forces per one-queue commit, and a commit waiting behind a force of its own messages.
     */
    @Test
    void aOneQueueCommitsStagedMessagesAreForcedOnceWithItsCommitRecord() throws Exception {
        // A sync interval far longer than the test, so that appends no one waits for are never forced on the clock.
        try (Broker broker = TestBrokers.start(dir, Map.of("storage.sync-interval-ms", "60000"));
             RawClient c = RawClient.connected(broker.port())) {
            declare(c, "invoices");
            declare(c, "barrier");
            // A plain publish first: a queue's first segment also gets a producer checkpoint, which waits for a force.
            publish(c, "invoices", "i0");
            io.sluice.storage.QueueStore invoices = broker.queues().get("invoices").store();
            long forcesBefore = invoices.syncCount();
            c.send(new TxBeginFrame(1, 0));
            txPublish(c, 1, "invoices", "i1", "i2", "i3");
            TestAwait.value("the staged messages written", java.time.Duration.ofSeconds(10), invoices::writtenIndex, id -> id >= 3);
            // Three confirms one after the other: the flusher finished a whole pass over every queue after the staging.
            publish(c, "barrier", "b1");
            publish(c, "barrier", "b2");
            publish(c, "barrier", "b3");
            assertEquals(forcesBefore, invoices.syncCount(), "staged messages no one waits for are not forced on their own");

            c.send(new TxCommitFrame(9, 1));
            assertEquals(9, c.expect(OkFrame.class).requestId());
            assertEquals(forcesBefore + 1, invoices.syncCount(), "one force for the staged messages and their commit record");
            assertTrue(invoices.durableIndex() >= 4, "the commit record and everything before it are durable before the OK");
            assertEquals(4, count(c, "invoices"));
        }
    }

    @Test
    void aCommitPublishesToSeveralQueuesAndAcknowledgesAtOnceAndNothingIsVisibleBefore() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port());
             RawClient reader = RawClient.connected(broker.port())) {
            List<RawClient.Delivery> orders = ordersDelivered(c);
            declare(c, "audit");
            reader.send(new SubscribeFrame(2, 8, "invoices", 10));
            reader.expect(OkFrame.class);

            c.send(new TxBeginFrame(1, 0));
            c.send(new TxAckFrame(1, 7, List.of(range(orders))));
            txPublish(c, 1, "invoices", "i1", "i2");
            txPublish(c, 1, "audit", "a1");
            assertEquals(0, count(c, "invoices"), "nothing a transaction publishes is visible before its commit");
            assertEquals(0, count(c, "audit"));
            assertEquals(2, count(c, "orders"), "its acknowledgements are held, not applied");
            assertNull(reader.received.poll(200, TimeUnit.MILLISECONDS), "no delivery of an uncommitted publish");

            c.send(new TxCommitFrame(9, 1));
            assertEquals(9, c.expect(OkFrame.class).requestId());
            assertEquals(2, count(c, "invoices"));
            assertEquals(1, count(c, "audit"));
            assertEquals(0, count(c, "orders"), "the commit acknowledged what the transaction held");
            List<RawClient.Delivery> invoices = reader.deliveries(2);
            assertEquals(List.of("i1", "i2"), payloads(invoices));
            assertEquals(1, broker.transactions().counts().commits());
            assertEquals(0, broker.transactions().open());
            // The commit record tells its staged messages from an uncommitted transaction's at a restart: it stays
            // until every message it published is consumed.
            reader.send(new AckFrame(8, List.of(range(invoices))));
            reader.send(new SubscribeFrame(3, 9, "audit", 10));
            reader.expect(OkFrame.class);
            RawClient.Delivery audit = reader.deliveries(1).get(0);
            assertEquals(1, broker.transactions().logRecords(), "the audit line is not consumed yet");
            reader.send(new AckFrame(9, List.of(IdRange.single(audit.id()))));
            assertEquals(0L, TestAwait.value("the transaction log finished", java.time.Duration.ofSeconds(10),
                    () -> broker.transactions().logRecords(), n -> n == 0), "its record is finished once what it published is consumed");
        }
    }

    @Test
    void aRollbackReturnsTheAcknowledgedMessagesWithTheirCountRaisedAndPublishesNothing() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            List<RawClient.Delivery> orders = ordersDelivered(c);
            c.send(new TxBeginFrame(1, 0));
            c.send(new TxAckFrame(1, 7, List.of(range(orders))));
            txPublish(c, 1, "invoices", "i1");
            c.send(new TxRollbackFrame(5, 1));
            List<RawClient.Delivery> again = new ArrayList<>();
            OkFrame ok = null;
            while (ok == null || again.size() < 2) { // the redeliveries and the answer come on their own threads
                Object frame = c.received.poll(10, TimeUnit.SECONDS);
                if (frame instanceof RawClient.Delivery d) {
                    again.add(d);
                } else if (frame instanceof OkFrame o) {
                    ok = o;
                } else {
                    throw new AssertionError("unexpected " + frame);
                }
            }
            assertEquals(5, ok.requestId());
            assertEquals(List.of("o1", "o2"), payloads(again), "returned to the front of the queue, in order");
            assertEquals(List.of(2, 2), again.stream().map(RawClient.Delivery::deliveryCount).toList());
            assertEquals(0, count(c, "invoices"));
            c.send(new TxCommitFrame(6, 1));
            ErrorFrame unknown = c.expect(ErrorFrame.class);
            assertEquals(ErrorCode.UNKNOWN_TRANSACTION.code(), unknown.code());
            assertEquals(1, broker.transactions().counts().rollbacks());
            assertEquals(0, broker.transactions().logRecords(), "a rolled-back transaction writes nothing into the log");
        }
    }

    @Test
    void aConnectionThatClosesRollsBackItsOpenTransaction() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient other = RawClient.connected(broker.port())) {
            declare(other, "orders");
            declare(other, "invoices");
            publish(other, "orders", "o1");
            try (RawClient c = RawClient.connected(broker.port())) {
                c.send(new SubscribeFrame(2, 7, "orders", 10));
                c.expect(OkFrame.class);
                List<RawClient.Delivery> orders = c.deliveries(1);
                c.send(new TxBeginFrame(1, 0));
                c.send(new TxAckFrame(1, 7, List.of(range(orders))));
                txPublish(c, 1, "invoices", "i1");
                assertEquals(0, count(c, "invoices")); // every frame before this one was handled
            }
            other.send(new SubscribeFrame(2, 8, "orders", 10));
            other.expect(OkFrame.class);
            RawClient.Delivery back = other.deliveries(1).get(0);
            assertEquals("o1", new String(back.payload(), StandardCharsets.UTF_8));
            assertEquals(2, back.deliveryCount());
            assertEquals(0, count(other, "invoices"));
            assertEquals(0, TestAwait.value("the transaction rolled back", java.time.Duration.ofSeconds(10), () -> broker.transactions().open(), n -> n == 0));
        }
    }

    @Test
    void aTransactionOpenPastItsTimeoutIsRolledBackAndItsClientTold() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            declare(c, "invoices");
            c.send(new TxBeginFrame(3, 200));
            txPublish(c, 3, "invoices", "i1");
            TxAbortedFrame aborted = c.expect(TxAbortedFrame.class);
            assertEquals(3, aborted.txnId());
            assertEquals(ErrorCode.TRANSACTION_TIMED_OUT, aborted.errorCode());
            assertTrue(aborted.message().contains("timeout of 200 ms"), aborted.message());
            c.send(new TxCommitFrame(4, 3));
            ErrorFrame refused = c.expect(ErrorFrame.class);
            assertEquals(4, refused.requestId());
            assertEquals(ErrorCode.TRANSACTION_TIMED_OUT.code(), refused.code());
            assertEquals(0, count(c, "invoices"));
            assertEquals(1, broker.transactions().counts().timeouts());
        }
    }

    @Test
    void badInputGetsItsCodeAndNothingPartialBecomesVisible() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of("transactions.max-messages", "3",
                "transactions.max-open-per-connection", "2"));
             RawClient c = RawClient.connected(broker.port())) {
            declare(c, "invoices");
            // A commit of a transaction never begun.
            c.send(new TxCommitFrame(1, 42));
            assertEquals(ErrorCode.UNKNOWN_TRANSACTION.code(), c.expect(ErrorFrame.class).code());
            // A publish to a queue that does not exist rolls the whole transaction back.
            c.send(new TxBeginFrame(1, 0));
            txPublish(c, 1, "invoices", "i1");
            txPublish(c, 1, "nowhere", "x");
            TxAbortedFrame noQueue = c.expect(TxAbortedFrame.class);
            assertEquals(ErrorCode.TRANSACTION_ABORTED, noQueue.errorCode());
            assertTrue(noQueue.message().contains("TX_PUBLISH was refused (UNKNOWN_QUEUE)") && noQueue.message().contains("'nowhere'"),
                    noQueue.message());
            c.send(new TxCommitFrame(2, 1));
            ErrorFrame rolledBack = c.expect(ErrorFrame.class);
            assertEquals(2, rolledBack.requestId());
            assertEquals(ErrorCode.TRANSACTION_ABORTED.code(), rolledBack.code());
            assertTrue(rolledBack.message().contains("'nowhere'"), rolledBack.message());
            // Over the cap of messages per transaction.
            c.send(new TxBeginFrame(2, 0));
            txPublish(c, 2, "invoices", "a", "b");
            txPublish(c, 2, "invoices", "c", "d");
            TxAbortedFrame over = c.expect(TxAbortedFrame.class);
            assertEquals(ErrorCode.TRANSACTION_LIMIT, over.errorCode());
            assertTrue(over.message().contains("transactions.max-messages 3"), over.message());
            c.send(new TxRollbackFrame(3, 2));
            assertEquals(3, c.expect(OkFrame.class).requestId());
            // A TX_PUBLISH naming no open transaction: its window still comes back. Every window before it first: the
            // one over the cap came back when it was refused, those of the frames it followed may come after the rollback.
            TestAwait.until("the windows of the six messages published so far back", () -> c.publishCredit.get() == 6);
            txPublish(c, 2, "invoices", "late");
            TxAbortedFrame unknown = c.expect(TxAbortedFrame.class);
            assertEquals(2, unknown.txnId());
            assertEquals(ErrorCode.UNKNOWN_TRANSACTION, unknown.errorCode());
            TestAwait.until("the window of the refused TX_PUBLISH back", () -> c.publishCredit.get() == 7);
            // An id reused while open rolls back the transaction under it; too many open at once.
            c.send(new TxBeginFrame(5, 0));
            c.send(new TxBeginFrame(5, 0));
            TxAbortedFrame reused = c.expect(TxAbortedFrame.class);
            assertEquals(5, reused.txnId());
            assertEquals(ErrorCode.TRANSACTION_ID_IN_USE, reused.errorCode());
            c.send(new TxBeginFrame(6, 0));
            c.send(new TxBeginFrame(7, 0)); // 5 still counts until its client hears of it: commit or rollback
            TxAbortedFrame tooMany = c.expect(TxAbortedFrame.class);
            assertEquals(7, tooMany.txnId());
            assertEquals(ErrorCode.TRANSACTION_LIMIT, tooMany.errorCode());
            c.send(new TxRollbackFrame(4, 5));
            assertEquals(4, c.expect(OkFrame.class).requestId());
            // An acknowledgement of messages never delivered to the consumer, and of a consumer that does not exist.
            declare(c, "orders");
            c.send(new SubscribeFrame(2, 7, "orders", 10));
            c.expect(OkFrame.class);
            c.send(new TxAckFrame(6, 7, List.of(new IdRange(1000, 1001))));
            TxAbortedFrame notOut = c.expect(TxAbortedFrame.class);
            assertEquals(ErrorCode.TRANSACTION_ABORTED, notOut.errorCode());
            assertTrue(notOut.message().contains("(UNKNOWN_MESSAGE_ID)"), notOut.message());
            c.send(new TxBeginFrame(9, 0));
            c.send(new TxAckFrame(9, 99, List.of(new IdRange(1, 1))));
            TxAbortedFrame noConsumer = c.expect(TxAbortedFrame.class);
            assertEquals(ErrorCode.TRANSACTION_ABORTED, noConsumer.errorCode());
            assertTrue(noConsumer.message().contains("(UNKNOWN_CONSUMER)"), noConsumer.message());
            assertEquals(0, count(c, "invoices"), "nothing of a rolled-back transaction was stored");
            assertTrue(c.isOpen(), "bad transactional input leaves the connection usable");
        }
    }

    /**
     * {@code transactions.max-messages} counts acknowledged messages too, which only their queues know: a TX_PUBLISH
     * within the cap on its own passes the loop's check, and the coordinator refuses it once its queue has staged it.
     */
    @Test
    void acknowledgedAndPublishedMessagesTogetherOverTheCapRollTheTransactionBack() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of("transactions.max-messages", "3"));
             RawClient c = RawClient.connected(broker.port())) {
            List<RawClient.Delivery> orders = ordersDelivered(c);
            c.send(new TxBeginFrame(1, 0));
            c.send(new TxAckFrame(1, 7, List.of(range(orders))));
            txPublish(c, 1, "invoices", "i1", "i2");
            // The rollback sends the held deliveries again: they and the TX_ABORTED come from different threads.
            TxAbortedFrame over = null;
            List<RawClient.Delivery> again = new ArrayList<>();
            while (over == null || again.size() < 2) {
                Object o = c.received.poll(10, TimeUnit.SECONDS);
                if (o instanceof TxAbortedFrame aborted) {
                    over = aborted;
                } else if (o instanceof RawClient.Delivery d) {
                    again.add(d);
                } else {
                    throw new AssertionError("expected TX_ABORTED and two deliveries, got " + o);
                }
            }
            assertEquals(ErrorCode.TRANSACTION_LIMIT, over.errorCode());
            assertTrue(over.message().contains("4 messages published and acknowledged")
                    && over.message().contains("transactions.max-messages 3"), over.message());
            assertEquals(List.of("o1", "o2"), payloads(again));
            assertEquals(2, again.get(0).deliveryCount());
            c.send(new TxRollbackFrame(2, 1));
            assertEquals(2, c.expect(OkFrame.class).requestId());
            assertEquals(0, count(c, "invoices"), "the staged messages were discarded");
        }
    }

    @Test
    void aCommitSurvivesARestartAndAnUncommittedTransactionLeavesNothing() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            List<RawClient.Delivery> orders = ordersDelivered(c);
            c.send(new TxBeginFrame(1, 0));
            c.send(new TxAckFrame(1, 7, List.of(new IdRange(orders.get(0).id(), orders.get(0).id()))));
            txPublish(c, 1, "invoices", "i1");
            c.send(new TxCommitFrame(2, 1));
            c.expect(OkFrame.class);
            c.send(new TxBeginFrame(2, 0));
            txPublish(c, 2, "invoices", "never");
            c.send(new AckFrame(7, List.of(new IdRange(orders.get(1).id(), orders.get(1).id()))));
            assertEquals(1, count(c, "invoices"));
        }
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            assertEquals(1, count(c, "invoices"));
            assertEquals(0, count(c, "orders"));
            c.send(new SubscribeFrame(2, 8, "invoices", 10));
            c.expect(OkFrame.class);
            List<RawClient.Delivery> invoice = c.deliveries(1);
            assertEquals(List.of("i1"), payloads(invoice));
            assertNull(c.received.poll(200, TimeUnit.MILLISECONDS), "the uncommitted publish was never stored");
            assertEquals(1, broker.transactions().logRecords(), "the commit record stays while i1 is in its queue");
            c.send(new AckFrame(8, List.of(IdRange.single(invoice.get(0).id()))));
            assertEquals(0L, TestAwait.value("the recovered commit finished", java.time.Duration.ofSeconds(10),
                    () -> broker.transactions().logRecords(), n -> n == 0));
        }
    }

    @Test
    void aPurgeLeavesWhatAnOpenTransactionStagedAndItsCommitStillPublishesIt() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            declare(c, "invoices");
            publish(c, "invoices", "old");
            c.send(new TxBeginFrame(1, 0));
            txPublish(c, 1, "invoices", "i1", "i2");
            // Both reach the queue's executor in frame order: the staging is there before the purge.
            c.send(new PurgeQueueFrame(3, "invoices"));
            assertEquals(1L, c.expect(OkFrame.class).messageCount().orElseThrow(), "only the visible message is purged");
            assertEquals(0, count(c, "invoices"));
            c.send(new TxCommitFrame(9, 1));
            assertEquals(9, c.expect(OkFrame.class).requestId());
            assertEquals(2, count(c, "invoices"));
            c.send(new SubscribeFrame(2, 8, "invoices", 10));
            c.expect(OkFrame.class);
            assertEquals(List.of("i1", "i2"), payloads(c.deliveries(2)));
        }
    }

    @Test
    void dropOldestMakesRoomWithVisibleMessagesAndNeverDropsAStagedOne() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            c.send(new DeclareQueueFrame(1, "invoices", QueueSettings.builder().quotaMessages(0, 2).overflowPolicy("drop-oldest").build()));
            c.expect(OkFrame.class);
            c.send(new TxBeginFrame(1, 0));
            txPublish(c, 1, "invoices", "i1"); // staged first: the oldest record of the queue
            publish(c, "invoices", "old");
            publish(c, "invoices", "new"); // the backlog is at its hard level of 2: room is made
            c.send(new TxCommitFrame(9, 1));
            assertEquals(9, c.expect(OkFrame.class).requestId());
            c.send(new SubscribeFrame(2, 8, "invoices", 10));
            c.expect(OkFrame.class);
            assertEquals(List.of("i1", "new"), payloads(c.deliveries(2)), "the visible 'old' was dropped, the staged i1 kept");
        }
    }

    @Test
    void aPublishToAQueueTheUserMayNotWriteRollsTheTransactionBack() throws Exception {
        Path file = dir.resolve("sluice-test.yaml");
        java.nio.file.Files.writeString(file, """
                auth:
                  anonymous-permissions:
                    - queues: "*"
                      actions: [consume, manage]
                    - queues: "invoices"
                      actions: [publish]
                """);
        Map<String, String> overrides = Map.of("broker.data-dir", dir.resolve("data").toString(), "broker.port", "0",
                "metrics.port", "0", "storage.reserved-disk-bytes", "67108864");
        try (Broker broker = Broker.start(new io.sluice.broker.config.ConfigLoader().load(file, overrides));
             RawClient c = RawClient.connected(broker.port())) {
            declare(c, "invoices");
            declare(c, "audit");
            c.send(new TxBeginFrame(1, 0));
            txPublish(c, 1, "invoices", "i1");
            txPublish(c, 1, "audit", "a1");
            TxAbortedFrame denied = c.expect(TxAbortedFrame.class);
            assertEquals(ErrorCode.TRANSACTION_ABORTED, denied.errorCode());
            assertTrue(denied.message().contains("(ACCESS_DENIED)") && denied.message().contains("audit"), denied.message());
            c.send(new TxCommitFrame(2, 1));
            assertEquals(ErrorCode.TRANSACTION_ABORTED.code(), c.expect(ErrorFrame.class).code());
            assertEquals(0, count(c, "invoices"), "the part the user may write was not stored either");
            assertEquals(0, count(c, "audit"));
        }
    }
}
