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

/**
 * The policies reject and drop-oldest say which hard quota a publish met. Found by a review: their sentences took the
 * reason of the flow state, which under these policies never reaches the hard level (only block tells producers to
 * wait), so a refusal said "queue 'q' is full: backlog below the soft quota", and a dropped message's dead-letter header
 * said it was dropped to make room for the same. Each names the setting that holds the quota: the queue's own (its DECLARE's
 * key) or the configuration's default for every queue (found by a later review: the sentences named no setting, and an
 * operator could not tell whether to raise the queue's quotaHardMessages or queues.quota-hard-messages).
 */
class HardQuotaReasonTest {
    @TempDir
    Path dir;

    @Test
    void aPublishRefusedByTheRejectPolicyNamesTheHardQuotaItMet() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("r", QueueSettings.builder().quotaMessages(0, 2).overflowPolicy("reject").build());
            FakeConnection producer = new FakeConnection("producer");
            core.publish(q, producer, 7, 0, new byte[10], new byte[10]);
            producer.await(ConfirmFrame.class, 1, Duration.ofSeconds(30));

            core.publish(q, producer, 7, 2, new byte[10]);
            List<PublishErrorFrame> refused = producer.await(PublishErrorFrame.class, 1, Duration.ofSeconds(30));
            assertEquals(ErrorCode.QUEUE_BLOCKED, refused.get(0).errorCode());
            assertEquals("queue 'r' is full: backlog of 2 messages reached the hard quota of 2 messages (quotaHardMessages); the"
                    + " overflow policy is reject (overflowPolicy)", refused.get(0).message());
        }
    }

    @Test
    void aPublishRefusedByTheRejectPolicyNamesTheHardQuotaInBytesItWouldPass() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("r", QueueSettings.builder().quotaBytes(0, 100).overflowPolicy("reject").build());
            FakeConnection producer = new FakeConnection("producer");
            core.publish(q, producer, 7, 0, new byte[60]);
            producer.await(ConfirmFrame.class, 1, Duration.ofSeconds(30));

            core.publish(q, producer, 7, 1, new byte[50]);
            List<PublishErrorFrame> refused = producer.await(PublishErrorFrame.class, 1, Duration.ofSeconds(30));
            assertEquals("queue 'r' is full: backlog of 60 bytes and a message of 50 bytes would pass the hard quota of 100 bytes"
                    + " (quotaHardBytes); the overflow policy is reject (overflowPolicy)", refused.get(0).message());
        }
    }

    @Test
    void aQueueOnTheConfigurationsQuotaIsToldTheConfigurationKeys() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never", "queues.quota-hard-messages", "2",
                "queues.overflow-policy", "reject"))) {
            BrokerQueue q = core.queues.declare("c", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            core.publish(q, producer, 7, 0, new byte[10], new byte[10]);
            producer.await(ConfirmFrame.class, 1, Duration.ofSeconds(30));

            core.publish(q, producer, 7, 2, new byte[10]);
            List<PublishErrorFrame> refused = producer.await(PublishErrorFrame.class, 1, Duration.ofSeconds(30));
            assertEquals("queue 'c' is full: backlog of 2 messages reached the hard quota of 2 messages"
                    + " (queues.quota-hard-messages); the overflow policy is reject (queues.overflow-policy)", refused.get(0).message());
        }
    }

    /** Drop-oldest with nothing it may drop said the queue was full, but not which quota filled it. */
    @Test
    void aPublishDropOldestCannotMakeRoomForNamesTheHardQuota() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("d", QueueSettings.builder().quotaMessages(0, 1).overflowPolicy("drop-oldest").build());
            FakeConnection producer = new FakeConnection("producer");
            core.publish(q, producer, 7, 0, new byte[10]);
            producer.await(ConfirmFrame.class, 1, Duration.ofSeconds(30));
            FakeConnection consumer = new FakeConnection("consumer");
            Subscription.open(q, consumer, 1, 1, QueueCore.unbounded());
            consumer.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30));

            core.publish(q, producer, 7, 1, new byte[10]);
            List<PublishErrorFrame> refused = producer.await(PublishErrorFrame.class, 1, Duration.ofSeconds(30));
            assertEquals("queue 'd' is full: backlog of 1 messages reached the hard quota of 1 messages (quotaHardMessages), and no"
                    + " message can be dropped now: every message is out with a consumer, or the dead-letter queue refused the last"
                    + " one dropped", refused.get(0).message());
        }
    }

    @Test
    void aMessageDroppedToMakeRoomSaysWhichHardQuotaInItsDeadLetterHeader() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("d", QueueSettings.builder().quotaMessages(0, 1).overflowPolicy("drop-oldest")
                    .set(QueueOptions.DEAD_LETTER_DROPPED, true).build());
            FakeConnection producer = new FakeConnection("producer");
            core.publish(q, producer, 7, 0, new byte[10]);
            core.publish(q, producer, 7, 1, new byte[10]);
            producer.await(ConfirmFrame.class, 2, Duration.ofSeconds(30));
            io.sluice.broker.TestAwait.until("the dead-letter queue holds the dropped one",
                    () -> core.queues.get("d.dlq") != null && core.queues.get("d.dlq").messageCount() == 1);

            BrokerQueue dlq = core.queues.get("d.dlq");
            FakeConnection consumer = new FakeConnection("consumer");
            Subscription.open(dlq, consumer, 1, 1, QueueCore.unbounded());
            FakeConnection.Delivery copy = consumer.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30)).get(0);
            assertEquals("dropped to make room: backlog of 1 messages reached the hard quota of 1 messages (quotaHardMessages)",
                    copy.header(DeadLetterer.HEADER_REASON));
        }
    }
}
