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

    private static void waitForRelocation(QueueStore store) throws InterruptedException {
        // The flusher's reclaim pass runs on its own clock.
        io.sluice.broker.TestAwait.until("the straggler relocated", () -> store.stats().relocatedMessages() >= 1);
    }
}
