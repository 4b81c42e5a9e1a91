package io.sluice.broker.cluster;

import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.Replication.TransactionPart;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.DeleteQueueFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.ProducerInitFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.netty.buffer.ByteBufAllocator;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R2 of docs/replication.md, "A node that cannot apply a committed entry stops", for each kind of entry: a store that
 * refuses this node's part of a committed entry (here its queue closed under it, as an I/O error leaves it; a full disk
 * is {@code ClusterApplyFailureTest}'s) stops the node from applying the log, with a reason naming the entry or the queue,
 * and nothing it is handed afterwards is applied (a restart applies it again from the log). Each used to be logged, or
 * not even that, and skipped: the node went on applying later entries and held less than the others.
 */
class ShardApplierStoreFailureTest extends ShardApplierFixture {
    private static final Duration WAIT = Duration.ofSeconds(10);

    private ShardApplier applier;

    /** "orders" with 3 messages of producer 7 and an empty queue "other", on a node of the newest level. */
    private BrokerQueue ordersWithThreeMessages() {
        applier = applier(EntryLevels.SUPPORTED);
        applier.applyLogEntry(declare(1), 1).join();
        applier.applyLogEntry(declareOf(2, "other"), 2).join();
        applier.applyLogEntry(publish(3, 7, 1, 3), 3).join();
        return queues.get("orders");
    }

    /** The store of {@code queue} goes away under it: every read and write of it fails, as after an I/O error. */
    private void failStoreOf(String queue) {
        queues.store().deleteQueue(queue);
    }

    /** Waits for the node to stop, then checks that an entry handed to it afterwards is not applied. */
    private String awaitStoppedAndNothingMoreApplied(String... reasonHolds) throws InterruptedException {
        io.sluice.broker.TestAwait.until("the node stopping", WAIT, () -> queues.applyHalt().halted());
        String reason = queues.applyHalt().reason();
        for (String part : reasonHolds) {
            assertTrue(reason.contains(part), "'" + part + "' in: " + reason);
        }
        assertTrue(reason.contains("start it again"), reason);
        applier.applyLogEntry(publishTo(90, "other", 1), 90).join();
        assertEquals(List.of(), stored(queues.get("other")), "an entry handed over after the stop is applied");
        return reason;
    }

    @Test
    void acksTheStoreRefusesStopTheNode() throws Exception {
        BrokerQueue orders = ordersWithThreeMessages();
        long first = orders.store().writtenIndex() - 2;
        failStoreOf("orders");
        applier.applyLogEntry(ShardEntry.encode(OTHER_NODE, 4, "orders", new AckFrame(0, List.of(new IdRange(first, first + 1))),
                MAX_FRAME), 4).join();
        awaitStoppedAndNothingMoreApplied("acks", "'orders'");
    }

    @Test
    void deliveriesTheStoreRefusesStopTheNode() throws Exception {
        BrokerQueue orders = ordersWithThreeMessages();
        long first = orders.store().writtenIndex() - 2;
        failStoreOf("orders");
        applier.applyLogEntry(ShardEntry.encodeDeliveries(OTHER_NODE, 4, "orders", new long[] {first}, new int[] {2}, 1), 4).join();
        awaitStoppedAndNothingMoreApplied("deliveries", "'orders'");
    }

    @Test
    void aTransactionsMessagesTheStoreRefusesStopTheNode() throws Exception {
        ordersWithThreeMessages();
        failStoreOf("orders");
        byte[] entry = TransactionEntry.encode(OTHER_NODE, 4, 77, List.of(new TransactionPart("orders", List.of(new byte[0]),
                List.of("inv:1".getBytes(StandardCharsets.UTF_8)), List.of())));
        applier.applyLogEntry(entry, 40).join();
        awaitStoppedAndNothingMoreApplied("log entry 40", "'orders'");
    }

    @Test
    void aRegistrationWhoseCheckpointCannotBeWrittenStopsTheNode() throws Exception {
        ordersWithThreeMessages();
        failStoreOf("orders");
        applier.applyLogEntry(ShardEntry.encode(OTHER_NODE, 4, "orders",
                new ProducerInitFrame(0, "orders", "billing", ProducerInitFrame.NEW_INSTANCE), MAX_FRAME), 41).join();
        awaitStoppedAndNothingMoreApplied("producer 'billing'", "log entry 41", "'orders'");
    }

    @Test
    void aDeclareWhoseFilesCannotBeMadeStopsTheNodeBeforeTheEntryCountsApplied() throws Exception {
        ordersWithThreeMessages();
        // Where the queue's directory goes, a file: its files cannot be made on this node alone.
        Files.writeString(dir.resolve("node").resolve("queues").resolve("invoices"), "in the way");
        RuntimeException stop = assertThrows(RuntimeException.class, () -> applier.applyLogEntry(declareOf(4, "invoices"), 42),
                "the declare's failure was logged and the entry skipped");
        assertTrue(stop.getMessage().contains("log entry 42") && stop.getMessage().contains("'invoices'")
                && stop.getMessage().contains("start it again"), stop.getMessage());
        assertNull(queues.get("invoices"));
    }

    @Test
    void aDeclareEveryNodeRefusesAlikeIsStillItsOutcome() {
        ordersWithThreeMessages();
        applier.applyLogEntry(ShardEntry.encode(OTHER_NODE, 4, "orders", new DeclareQueueFrame(0, "orders",
                QueueSettings.builder().maxDeliveries(3).build()), MAX_FRAME), 43).join(); // other settings: refused
        assertNull(queues.applyHalt().reason());
    }

    @Test
    void aDeleteWhoseFilesCannotBeRemovedStopsTheNodeBeforeTheEntryCountsApplied() {
        ordersWithThreeMessages();
        failStoreOf("orders");
        RuntimeException stop = assertThrows(RuntimeException.class, () -> applier.applyLogEntry(
                ShardEntry.encode(OTHER_NODE, 4, "orders", new DeleteQueueFrame(0, "orders"), MAX_FRAME), 44),
                "the delete's failure was logged and the entry skipped");
        assertTrue(stop.getMessage().contains("log entry 44") && stop.getMessage().contains("'orders'"), stop.getMessage());
    }

    private static byte[] declareOf(long call, String queue) {
        return ShardEntry.encode(OTHER_NODE, call, queue, new DeclareQueueFrame(0, queue, QueueSettings.EMPTY), MAX_FRAME);
    }

    private static byte[] publishTo(long call, String queue, int sequence) {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, queue);
        builder.add(8, sequence, List.of(), ("8:" + sequence).getBytes(StandardCharsets.UTF_8));
        PublishFrame frame = builder.build();
        try {
            return ShardEntry.encode(OTHER_NODE, call, queue, frame, MAX_FRAME);
        } finally {
            frame.release();
        }
    }
}
