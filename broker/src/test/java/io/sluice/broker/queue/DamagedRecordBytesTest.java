package io.sluice.broker.queue;

import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A damaged record the store discards (it fails its checksum) leaves the queue's byte backlog with it. Its bytes stayed
 * counted until the queue emptied (found by a review): the figure drifted up with each one, so byte quotas slowed,
 * blocked or made drop-oldest drop for bytes no longer stored.
 */
class DamagedRecordBytesTest {
    @TempDir
    Path dir;

    @Test
    void dropOldestsDiscardOfADamagedRecordTakesItsBytesOffTheBacklog() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.builder().quotaMessages(0, 2).overflowPolicy("drop-oldest").build());
            FakeConnection producer = new FakeConnection("producer");
            core.publish(q, producer, 5, 1, bytes("AAAAAAAA"), bytes("BBBBBBBB"));
            producer.await(ConfirmFrame.class, 1, Duration.ofSeconds(30));
            damage(q, "AAAAAAAA");
            core.publish(q, producer, 5, 3, bytes("CCCCCCCCCC")); // drops the oldest, the damaged one
            producer.await(ConfirmFrame.class, 2, Duration.ofSeconds(30));
            assertEquals(1L, (long) QueueCore.onLoop(q, q.store()::corruptRecords));
            assertEquals(2L, (long) QueueCore.onLoop(q, q.store()::unackedMessages));
            assertEquals(18L, (long) QueueCore.onLoop(q, q::backlogBytes), "B's 8 bytes and C's 10");
        }
    }

    /** The same for a damaged record a consumer's reader meets: discarded, never delivered, and off the backlog. */
    @Test
    void aDamagedRecordTheReaderDiscardsTakesItsBytesOffTheBacklog() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            core.publish(q, producer, 5, 1, bytes("AAAAAAAA"), bytes("BBBBBBBBBB"));
            producer.await(ConfirmFrame.class, 1, Duration.ofSeconds(30));
            damage(q, "AAAAAAAA");
            FakeConnection consumer = new FakeConnection("consumer");
            Subscription.open(q, consumer, 1, 10, QueueCore.unbounded());
            FakeConnection.Delivery delivered = consumer.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30)).get(0);
            assertEquals("BBBBBBBBBB", new String(delivered.payload(), StandardCharsets.UTF_8));
            assertEquals(1L, (long) QueueCore.onLoop(q, q.store()::corruptRecords));
            QueueCore.awaitOnLoop(q, q::backlogBytes, 10L);
        }
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static void damage(BrokerQueue q, String marker) throws Exception {
        long first = QueueCore.onLoop(q, () -> q.store().nextUnacked(0));
        DamagedRecords.flipAByteOf(q.store().segmentDirectory(), first, marker);
    }
}
