package io.sluice.broker.queue;

import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * docs/flow-control.md, drop-oldest: "each discard is counted (BrokerQueue.dropped())", and a message whose move the
 * dead-letter queue refuses "stays in the queue". Found by a review: a drop whose move failed, which discarded
 * nothing, was counted.
 */
class DropOldestCountTest {
    @TempDir
    Path dir;

    @Test
    void aDropWhoseDeadLetterMoveFailedIsNotCountedAsDropped() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never", "queues.max-redelivery-delay-ms", "60000"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.builder().quotaMessages(0, 5).overflowPolicy("drop-oldest")
                    .set(QueueOptions.DEAD_LETTER_DROPPED, true).build());
            core.queues.limitQueues(1); // q.dlq cannot be created: every move fails
            FakeConnection producer = new FakeConnection("producer");
            for (int i = 1; i <= 6; i++) {
                core.publish(q, producer, 7, i, new byte[] {(byte) i});
            }
            QueueCore.awaitOnLoop(q, q::deadLetterFailures, 1L); // the sixth made room by a move, which failed
            assertEquals(6L, (long) QueueCore.onLoop(q, q.store()::unackedMessages), "the oldest stayed: nothing was discarded");
            assertEquals(0L, (long) QueueCore.onLoop(q, q::dropped), "dropped() counts a message that is still in the queue");
        }
    }
}
