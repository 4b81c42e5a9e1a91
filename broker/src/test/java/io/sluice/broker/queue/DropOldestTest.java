package io.sluice.broker.queue;

import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.QueueStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The drop-oldest overflow policy once a straggler has been relocated (issue 15, defect 1). */
class DropOldestTest {
    private static final int TAG = 1;
    @TempDir
    Path dir;

    /** Five messages fill a 1 MiB segment; a sixth starts the next. */
    private static byte[] big(int n) {
        byte[] b = new byte[200 << 10];
        b[0] = (byte) n;
        return b;
    }

    @Test
    void aFullQueueWhoseMessagesAreAllOutWithConsumersRefusesThePublishInsteadOfHangingItsLoop() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of(
                "storage.segment-bytes", Long.toString(1 << 20),
                "storage.max-message-bytes", Long.toString(256 << 10),
                "storage.relocate-max-live-ratio", "0.5",
                "storage.relocate-after-ms", "0",
                "storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.builder()
                    .quotaMessages(0, 5).overflowPolicy("drop-oldest").build());
            FakeConnection producer = new FakeConnection("producer");
            FakeConnection consumer = new FakeConnection("consumer");
            core.publish(q, producer, 7, 0, big(0), big(1), big(2), big(3), big(4));
            Subscription sub = Subscription.open(q, consumer, TAG, 100, QueueCore.unbounded());
            List<FakeConnection.Delivery> first = consumer.await(FakeConnection.Delivery.class, 5, Duration.ofSeconds(30));
            // Message 4 is the straggler of the first segment.
            sub.ack(QueueCore.ack(TAG, first.get(0).id(), first.get(1).id(), first.get(2).id(), first.get(3).id()));
            core.publish(q, producer, 7, 5, big(5), big(6), big(7), big(8));
            consumer.await(FakeConnection.Delivery.class, 9, Duration.ofSeconds(30));
            QueueStore store = q.store();
            waitForRelocation(store);

            // Backlog 5 (4..8), hard limit 5, every message out with the consumer, one of them relocated.
            core.publish(q, producer, 7, 9, big(9));
            List<PublishErrorFrame> refused = producer.await(PublishErrorFrame.class, 1, Duration.ofSeconds(30));
            assertEquals(ErrorCode.QUEUE_BLOCKED, refused.get(0).errorCode());
            assertEquals(9, refused.get(0).sequences().from());
            assertTrue(refused.get(0).message().contains("every message is out with a consumer"), refused.get(0).message());
            assertEquals(5L, (long) QueueCore.onLoop(q, store::unackedMessages), "nothing was dropped");
            Set<Long> delivered = consumer.deliveries().stream().map(FakeConnection.Delivery::id).collect(Collectors.toSet());
            assertEquals(9, delivered.size());
        }
    }

    /**
     * drop-oldest with dead-lettering, and a dead-letter queue that refuses the copies (here it cannot be created): a
     * message whose move failed stays in the queue until its retry, and while it waits no more room is made, so the
     * publishes over the hard quota are refused instead of each starting one more failing move and being stored (found
     * by a review: the backlog grew by one message a publish, without bound).
     */
    @Test
    void aDeadLetterQueueThatRefusesDroppedMessagesLeavesTheHardQuotaInForce() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never", "queues.max-redelivery-delay-ms", "60000"))) {
            FakeConnection producer = new FakeConnection("producer");
            BrokerQueue q = core.dropOldestQueueWithAFailedMove(producer); // the sixth made room by a move, which failed
            // A drop counts once its message is gone; this one stayed (found by a review: it was counted at the move's start).
            assertEquals(0L, (long) QueueCore.onLoop(q, q::dropped), "dropped() counts a message that is still in the queue");
            for (int i = 7; i <= 205; i++) {
                core.publish(q, producer, 7, i, new byte[] {(byte) i});
            }
            List<PublishErrorFrame> refused = producer.await(PublishErrorFrame.class,
                    list -> list.stream().mapToLong(f -> f.sequences().to() - f.sequences().from() + 1).sum() == 199,
                    Duration.ofSeconds(30), "199 publishes refused");
            assertEquals(ErrorCode.QUEUE_BLOCKED, refused.get(0).errorCode());
            assertTrue(refused.get(0).message().contains("dead-letter queue refused"), refused.get(0).message());
            assertEquals(6L, (long) QueueCore.onLoop(q, q.store()::unackedMessages),
                    "the five under the quota and the one whose move failed, which waits for its retry");
        }
    }

    private static void waitForRelocation(QueueStore store) throws InterruptedException {
        // The flusher's reclaim pass runs on its own clock.
        io.sluice.broker.TestAwait.until("the straggler relocated", () -> store.stats().relocatedMessages() >= 1);
    }
}
