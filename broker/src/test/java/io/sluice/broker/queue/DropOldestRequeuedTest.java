package io.sluice.broker.queue;

import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * docs/flow-control.md, drop-oldest: "at the hard level each new message discards the oldest unacknowledged message
 * that is not out with a consumer". Messages a consumer was given and that went back to the queue when it left (D4)
 * are out with no consumer. Found by a review: drop-oldest skipped every tracked message, so a full queue whose
 * messages were all delivered once refused every publish ("every message is out with a consumer") with no consumer.
 */
class DropOldestRequeuedTest {
    private static final int TAG = 1;
    @TempDir
    Path dir;

    @Test
    void messagesThatWentBackToTheQueueCanBeDropped() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.builder().quotaMessages(0, 5).overflowPolicy("drop-oldest").build());
            FakeConnection producer = new FakeConnection("producer");
            FakeConnection consumer = new FakeConnection("consumer");
            core.publish(q, producer, 7, 1, new byte[] {1}, new byte[] {2}, new byte[] {3}, new byte[] {4}, new byte[] {5});
            producer.await(ConfirmFrame.class, 1, Duration.ofSeconds(30));
            Subscription sub = Subscription.open(q, consumer, TAG, 5, QueueCore.unbounded());
            consumer.await(FakeConnection.Delivery.class, 5, Duration.ofSeconds(30));
            sub.close(); // the consumer leaves: its five messages go back to the front of the queue (D4)
            QueueCore.awaitOnLoop(q, q::consumerCount, 0);

            core.publish(q, producer, 7, 6, new byte[] {6});
            producer.await(ConfirmFrame.class, list -> list.size() + producer.all(PublishErrorFrame.class).size() >= 2,
                    Duration.ofSeconds(30), "the sixth settled");
            assertEquals(java.util.List.of(), producer.all(PublishErrorFrame.class), "no consumer holds anything, yet the publish was refused");
            assertEquals(1L, (long) QueueCore.onLoop(q, q::dropped));
            assertEquals(5L, (long) QueueCore.onLoop(q, q.store()::unackedMessages));
        }
    }
}
