package io.sluice.broker.cluster;

import io.sluice.broker.error.BrokerException;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.Replication.TransactionPart;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.dedup.ProducerTable;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R13 of docs/replication.md: a transaction's entry ({@link TransactionEntry}) applied as a whole, once, however often
 * it is replayed; refused before the log when the entry level does not allow it or it would not fit one entry.
 */
class ShardApplierTransactionTest extends ShardApplierFixture {
    private static final long INDEX = 20;

    @Test
    void shouldStoreAndAcknowledgeATransactionOnceAcrossReplaysAndARestart() {
        ShardApplier applier = applier(EntryLevels.SUPPORTED);
        applier.applyLogEntry(declare(1), 1).join();
        applier.applyLogEntry(ShardEntry.encode(OTHER_NODE, 2, "invoices", new DeclareQueueFrame(0, "invoices", QueueSettings.EMPTY),
                MAX_FRAME), 2).join();
        applier.applyLogEntry(publish(3, 7, 1, 3), 3).join();
        BrokerQueue orders = queues.get("orders");
        long first = orders.store().writtenIndex() - 2; // "7:1"
        byte[] entry = transaction(List.of(
                part("invoices", "inv:1", "inv:2"),
                new TransactionPart("orders", List.of(), List.of(), List.of(IdRange.single(first))),
                part("invoices", "inv:3")));

        applier.applyLogEntry(entry, INDEX).join();
        assertEquals(List.of("inv:1", "inv:2", "inv:3"), stored(queues.get("invoices")));
        assertTrue(orders.store().isAcked(first), "the acknowledgement is applied with the publishes");
        assertEquals(2, orders.store().unackedMessages());
        queues.get("invoices").store().forEachRecordAfter(-1, (id, record) ->
                assertEquals(ProducerTable.CLUSTER_TRANSACTIONS_PRODUCER_ID, record.producerId()));

        applier.applyLogEntry(entry, INDEX).join(); // a replay of the same log entry
        assertEquals(List.of("inv:1", "inv:2", "inv:3"), stored(queues.get("invoices")), "a replay stores nothing twice");

        reopenQueues(); // the producer table rebuilt from the store (its records after the checkpoint)
        applier = applier(EntryLevels.SUPPORTED);
        applier.applyLogEntry(entry, INDEX).join();
        assertEquals(List.of("inv:1", "inv:2", "inv:3"), stored(queues.get("invoices")), "nor after a restart");

        applier.applyLogEntry(entry, INDEX + 1).join(); // the same bytes at another index: another transaction
        assertEquals(List.of("inv:1", "inv:2", "inv:3", "inv:1", "inv:2", "inv:3"), stored(queues.get("invoices")));
    }

    @Test
    void shouldStopRatherThanSkipATransactionOnANodeBelowItsLevel() {
        ShardApplier applier = applier(TransactionEntry.LEVEL - 1);
        applier.applyLogEntry(declare(1), 1).join();
        byte[] entry = transaction(List.of(part("orders", "a")));
        assertThrows(EntryLevels.EntryTooNew.class, () -> applier.applyLogEntry(entry, INDEX));
        assertEquals(List.of(), stored(queues.get("orders")));
        assertFalse(EntryBatch.batchable(entry), "its messages' identity is its own log index");
    }

    @Test
    void shouldDecodeWhatItEncodes() {
        List<TransactionPart> parts = List.of(part("a", "x", ""), new TransactionPart("b", List.of(), List.of(),
                List.of(new IdRange(3, 9), IdRange.single(12))));
        byte[] entry = TransactionEntry.encode(3, 44, 55, parts);
        assertEquals(TransactionEntry.encodedLength(parts), entry.length);
        TransactionEntry.Decoded decoded = TransactionEntry.decode(entry);
        assertEquals(3, decoded.originNode());
        assertEquals(44, decoded.originCall());
        assertEquals(55, decoded.transaction());
        assertEquals(2, decoded.parts().size());
        assertEquals("a", decoded.parts().get(0).queue());
        assertArrayEquals("x".getBytes(StandardCharsets.UTF_8), decoded.parts().get(0).payloads().get(0));
        assertEquals(List.of(new IdRange(3, 9), IdRange.single(12)), decoded.parts().get(1).acks());
        assertThrows(IllegalArgumentException.class, () -> TransactionEntry.decode(java.util.Arrays.copyOf(entry, entry.length - 1)));
        assertEquals(TransactionEntry.LEVEL, EntryLevels.required(entry[0] & 0xff));
    }

    @Test
    void shouldRefuseBeforeTheLogBelowItsLevelAndWhenItWouldNotFitOneEntry() {
        AtomicInteger submitted = new AtomicInteger();
        FinalizedEntryLevel level = new FinalizedEntryLevel(EntryLevels.SUPPORTED, null); // a cluster from before levels: 5
        ClusterTransactions transactions = new ClusterTransactions(1, 1000, level, new Submissions(), (call, entry, what) -> {
            submitted.incrementAndGet();
            return CompletableFuture.completedFuture(false);
        }, () -> "not the leader");
        String refusal = transactions.refused();
        assertNotNull(refusal);
        assertTrue(refusal.contains("level 6") && refusal.contains("/api/cluster/feature-level"), refusal);
        assertEquals(ErrorCode.NOT_REPLICATED, code(transactions.commit(1, List.of(part("q", "m")))));

        level.apply(TransactionEntry.LEVEL, 5);
        assertNull(transactions.refused());
        BrokerException tooLarge = failure(transactions.commit(2, List.of(part("q", "m".repeat(1000)))));
        assertEquals(ErrorCode.TRANSACTION_LIMIT, tooLarge.code());
        assertTrue(tooLarge.getMessage().contains("broker.max-frame-bytes 1000"), tooLarge.getMessage());
        assertEquals(0, submitted.get(), "nothing refused was submitted");

        transactions.commit(3, List.of(part("q", "m")));
        assertEquals(1, submitted.get());
    }

    private static ErrorCode code(CompletableFuture<Void> commit) {
        return failure(commit).code();
    }

    private static BrokerException failure(CompletableFuture<Void> commit) {
        CompletionException e = assertThrows(CompletionException.class, commit::join);
        return assertInstanceOf(BrokerException.class, e.getCause());
    }

    private static TransactionPart part(String queue, String... payloads) {
        List<byte[]> headers = new ArrayList<>();
        List<byte[]> bodies = new ArrayList<>();
        for (String p : payloads) {
            headers.add(new byte[0]);
            bodies.add(p.getBytes(StandardCharsets.UTF_8));
        }
        return new TransactionPart(queue, headers, bodies, List.of());
    }

    private static byte[] transaction(List<TransactionPart> parts) {
        return TransactionEntry.encode(OTHER_NODE, 9, 77, parts);
    }
}
