package io.sluice.broker.queue;

import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A single broker's purge and the dead-letter moves of drop-oldest: a message on its way to the dead-letter queue is
 * not the purge's to remove (its move settles it, as on a cluster leader), and a message the purge removed while it
 * waited for its move's retry no longer holds drop-oldest back.
 */
class PurgeDeadLetterMovesTest {
    @TempDir
    Path dir;

    @Test
    void aMessageOnItsWayToTheDeadLetterQueueIsMovedNotPurged() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.builder().quotaMessages(0, 5).overflowPolicy("drop-oldest")
                    .set(QueueOptions.DEAD_LETTER_DROPPED, true).build());
            BrokerQueue dlq = core.queues.declare("q.dlq", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            for (int i = 1; i <= 5; i++) {
                core.publish(q, producer, 7, i, new byte[] {(byte) i});
            }
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, 5L);

            // One task on the loop that queues both: the sixth publish's drop starts moving message 0, and the purge
            // runs before the copy is stored, so while the move is under way.
            io.netty.util.concurrent.Future<Long> purged = QueueCore.onLoop(q, () -> {
                core.publish(q, producer, 7, 6, new byte[] {6});
                return q.purge();
            });
            assertEquals(5L, (long) purged.get(30, TimeUnit.SECONDS), "messages 1..5 removed; message 0 is being moved");
            QueueCore.awaitOnLoop(q, q::dropped, 1L);
            assertEquals(1L, (long) QueueCore.onLoop(q, q::deadLettered));
            assertEquals(0L, (long) QueueCore.onLoop(q, q.store()::unackedMessages));
            assertEquals(0L, (long) QueueCore.onLoop(q, q::backlogBytes));
            assertEquals(1L, (long) QueueCore.onLoop(dlq, dlq.store()::unackedMessages), "the copy of message 0 alone");
        }
    }

    @Test
    void aPurgedMessageWaitingForItsMovesRetryNoLongerHoldsDropOldestBack() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never", "queues.max-redelivery-delay-ms", "600000"))) {
            FakeConnection producer = new FakeConnection("producer");
            BrokerQueue q = core.dropOldestQueueWithAFailedMove(producer);
            assertEquals(6L, (long) q.purge().get(30, TimeUnit.SECONDS));
            core.queues.limitQueues(2); // q.dlq can be created now

            for (int i = 7; i <= 12; i++) {
                core.publish(q, producer, 7, i, new byte[] {(byte) i});
            }
            producer.await(ConfirmFrame.class, list -> list.stream().flatMap(f -> f.sequences().stream()).anyMatch(r -> r.contains(12))
                    || producer.all(PublishErrorFrame.class).stream().anyMatch(f -> f.sequences().contains(12)),
                    Duration.ofSeconds(30), "sequence 12 confirmed or refused");
            assertEquals(List.of(), producer.all(PublishErrorFrame.class),
                    "the purged message, whose move failed, still held drop-oldest back");
            QueueCore.awaitOnLoop(q, q::dropped, 1L); // the twelfth made room by moving message 6, the oldest
            assertEquals(5L, (long) QueueCore.onLoop(q, q.store()::unackedMessages));
            BrokerQueue dlq = core.queues.get("q.dlq");
            assertEquals(1L, (long) QueueCore.onLoop(dlq, dlq.store()::unackedMessages));
        }
    }
}
