package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.Directories;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A dead-letter move whose copy is durable ends with the original acknowledged, even when the source's ack state cannot be
 * written (its journal rotation's checkpoint fails: the queue's storage is failed, docs/storage.md). The store then
 * acknowledges the original in memory and throws; the move must end as moved all the same (off the backlog, counted),
 * never leave the original tracked in no ready list and no consumer's hands until a restart.
 */
class DeadLetterMoveAckFailureTest {
    private static final int TAG = 1;
    private static final Map<String, String> CONFIG = Map.of("storage.durability", "never", "storage.ack-journal-bytes", "4096",
            "queues.max-redelivery-delay-ms", "200");
    @TempDir
    Path dir;

    @Test
    void aMoveWhoseOriginalsAckFailsInTheAckStateEndsMoved() throws Exception {
        int failing = 400;
        int messages = 500;
        try (QueueCore core = new QueueCore(dir, CONFIG)) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            AckAfterAckStateFailureTest.Delivered delivered = AckAfterAckStateFailureTest.publishAndDeliver(core, q, messages);
            Subscription sub = delivered.sub();
            List<FakeConnection.Delivery> out = delivered.deliveries();
            Path blocker = AckAfterAckStateFailureTest.blockAckCheckpoints(q);
            try {
                // 200 records overflow the 4,096-byte journal: its rotation fails.
                sub.ack(AckAfterAckStateFailureTest.everyOther(out, 0, failing));
                QueueCore.onLoop(q, () -> null);
                assertNotNull(q.store().failure(), "the rotation failed the queue's storage");

                long rejected = out.get(failing + 1).id();
                sub.nack(new NackFrame(TAG, NackAction.REJECT_TO_DEAD_LETTER, 0, List.of(IdRange.single(rejected))));

                QueueCore.awaitOnLoop(q, q::deadLettered, 1L);
                assertEquals(0L, (long) QueueCore.onLoop(q, q::deadLetterFailures));
                assertTrue(QueueCore.onLoop(q, () -> q.store().isAcked(rejected)), "the original is acknowledged in memory");
                long left = messages - failing / 2 - 1;
                assertEquals(left, (long) QueueCore.onLoop(q, q.store()::unackedMessages));
                assertEquals(left, (long) QueueCore.onLoop(q, q::backlogBytes), "the moved message left the byte backlog");
                assertEquals(left, q.snapshot().get().backlogMessages());
                assertEquals(left, q.snapshot().get().consumers().get(0).unackedMessages(), "the rest is out with the consumer");

                BrokerQueue dead = core.queues.get("q.dlq");
                FakeConnection inspector = new FakeConnection("inspector");
                Subscription.open(dead, inspector, 1, 10, QueueCore.unbounded());
                List<FakeConnection.Delivery> copies = inspector.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30));
                assertEquals(Long.toString(rejected), copies.get(0).header(DeadLetterer.HEADER_ORIGINAL_ID));
                assertEquals(1L, (long) QueueCore.onLoop(dead, dead.store()::unackedMessages));
            } finally {
                Directories.deleteRecursively(blocker); // so that the close's checkpoint is written
            }
        }
    }
}
