package io.sluice.broker.queue;

import io.sluice.broker.TestAwait;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.QueueStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A producer checkpoint left by a run with deduplication on must not hold reclaim back for good once
 * a broker runs with it off: no owner would ever move the mark it sets (rule R6).
 */
class DedupOffReclaimTest {
    @TempDir
    Path dir;

    private static final Map<String, String> SMALL = Map.of("storage.segment-bytes", Long.toString(1 << 20),
            "storage.max-message-bytes", "131072");

    @Test
    void withDedupOffAnEarlierRunsCheckpointHoldsNothingBack() throws Exception {
        try (QueueCore core = new QueueCore(dir, SMALL)) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            core.publish(q, new FakeConnection("p"), 7, 1, new byte[16]); // with dedup on: a checkpoint through it
            TestAwait.until("a producer checkpoint", () ->
                    io.sluice.storage.dedup.ProducerCheckpoint.coveredThrough(q.store().directory()) >= 0);
        }
        Map<String, String> off = new java.util.HashMap<>(SMALL);
        off.put("queues.dedup-enabled", "false");
        try (QueueCore core = new QueueCore(dir, off)) {
            BrokerQueue q = core.queues.get("q");
            QueueStore store = q.store();
            FakeConnection p = new FakeConnection("p");
            for (int i = 0; i < 40; i++) { // 40 x 64 KiB: past two segments of 1 MiB
                core.publish(q, p, 0, i + 1, new byte[64 << 10]);
            }
            TestAwait.until("40 confirmed", () -> p.publishCreditReturned() >= 40); // given back at each confirm
            ackAllAndAwaitOnlyTheWrittenSegment(store, store.writtenIndex());
        }
    }

    /** A queue that only ever receives dead letters (forwarded records) still gives its acknowledged segments back (R6). */
    @Test
    void aQueueOfForwardedRecordsOnlyIsReclaimed() throws Exception {
        try (QueueCore core = new QueueCore(dir, SMALL)) {
            BrokerQueue dlq = core.queues.declare("q.dlq", QueueSettings.EMPTY);
            long last = -1;
            for (int i = 0; i < 40; i++) {
                last = dlq.acceptForwarded(7, i + 1, ByteBuffer.allocate(0), ByteBuffer.allocate(64 << 10))
                        .get(10, java.util.concurrent.TimeUnit.SECONDS);
            }
            QueueStore store = dlq.store();
            ackAllAndAwaitOnlyTheWrittenSegment(store, last);
            assertEquals(0, store.unackedMessages());
        }
    }

    /**
     * Acknowledges every message through {@code last} and waits until every sealed segment is reclaimed, only the
     * segment being written left (rule R1 keeps it). The segments are read before the acks: the flusher's pass for
     * the acks may come before the test reads anything after them, and the oldest segment read then was the one
     * being written, which no pass ever reclaims (the test waited for it for good when a busy machine held its
     * thread back between the ack and the read, though the broker had reclaimed every sealed segment).
     */
    private static void ackAllAndAwaitOnlyTheWrittenSegment(QueueStore store, long last) throws InterruptedException {
        List<Integer> before = store.segmentNumbers();
        assertTrue(before.size() >= 3, "past two segments: " + before);
        List<Integer> written = List.of(before.get(before.size() - 1));
        store.ackRange(0, last);
        TestAwait.until("segments " + before.subList(0, before.size() - 1) + " reclaimed",
                () -> store.segmentNumbers().equals(written));
    }
}
