package io.sluice.broker.queue;

import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * drop-oldest under a hard quota in bytes. Found by a review: each new message at the hard level dropped one old message
 * whatever their sizes, so a message larger than the one it replaced was stored over the quota, and the byte backlog
 * stayed above the hard level by the difference, growing with each larger message (small messages, then large ones:
 * up to the hard quota in messages times the largest size).
 */
class DropOldestBytesTest {
    @TempDir
    Path dir;

    @Test
    void aLargerMessageDropsAsManyOldOnesAsItNeedsToFitUnderTheHardQuota() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.builder().quotaBytes(0, 1000).overflowPolicy("drop-oldest").build());
            FakeConnection producer = new FakeConnection("producer");
            byte[][] small = new byte[10][];
            for (int i = 0; i < small.length; i++) {
                small[i] = new byte[100];
            }
            core.publish(q, producer, 7, 0, small);
            producer.await(ConfirmFrame.class, 1, Duration.ofSeconds(30));
            assertEquals(1000L, (long) QueueCore.onLoop(q, q::backlogBytes), "at the hard quota");

            core.publish(q, producer, 7, 10, new byte[500]);
            producer.await(ConfirmFrame.class, 2, Duration.ofSeconds(30));
            assertEquals(1000L, (long) QueueCore.onLoop(q, q::backlogBytes), "five old messages made room for the new one");
            assertEquals(6L, (long) QueueCore.onLoop(q, q.store()::unackedMessages));
            assertEquals(5L, (long) QueueCore.onLoop(q, q::dropped));
        }
    }

    @Test
    void aMessageLargerThanTheHardQuotaIsRefusedWithoutDroppingAnything() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.builder().quotaBytes(0, 1000).overflowPolicy("drop-oldest").build());
            FakeConnection producer = new FakeConnection("producer");
            core.publish(q, producer, 7, 0, new byte[100], new byte[100]);
            producer.await(ConfirmFrame.class, 1, Duration.ofSeconds(30));

            core.publish(q, producer, 7, 2, new byte[1001]);
            List<PublishErrorFrame> refused = producer.await(PublishErrorFrame.class, 1, Duration.ofSeconds(30));
            assertEquals(ErrorCode.QUEUE_BLOCKED, refused.get(0).errorCode());
            assertTrue(refused.get(0).message().contains("larger than the hard quota"), refused.get(0).message());
            assertEquals(2L, (long) QueueCore.onLoop(q, q.store()::unackedMessages), "nothing dropped for it");
            assertEquals(0L, (long) QueueCore.onLoop(q, q::dropped));
        }
    }
}
