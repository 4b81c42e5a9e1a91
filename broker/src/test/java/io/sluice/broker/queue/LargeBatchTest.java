package io.sluice.broker.queue;

import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * One dispatch and one ACK frame of more messages than a batch holds: the store batches start small
 * and grow (AckBatch, DeliveryFrames), so every size from 1 to past the largest batch goes through
 * growth and flushes; every message is delivered once and acknowledged.
 */
class LargeBatchTest {
    private static final int TAG = 7;
    private static final int MESSAGES = 2_500; // more than two full batches of 1,024

    @TempDir
    Path dir;

    @Test
    void aDispatchAndAnAckFrameOfMoreMessagesThanABatchDeliverAndAcknowledgeEveryOne() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("large", QueueSettings.builder().build());
            FakeConnection producer = new FakeConnection("producer");
            FakeConnection consumer = new FakeConnection("consumer");
            for (int frame = 0; frame < MESSAGES / 100; frame++) {
                byte[][] payloads = new byte[100][];
                for (int i = 0; i < payloads.length; i++) {
                    payloads[i] = new byte[16];
                }
                core.publish(q, producer, 1, frame * 100L, payloads);
            }
            producer.await(ConfirmFrame.class, MESSAGES / 100, Duration.ofSeconds(60));
            assertEquals((long) MESSAGES, (long) QueueCore.onLoop(q, q.store()::unackedMessages));

            Subscription sub = Subscription.open(q, consumer, TAG, MESSAGES, QueueCore.unbounded());
            List<FakeConnection.Delivery> delivered = consumer.await(FakeConnection.Delivery.class, MESSAGES, Duration.ofSeconds(60));
            Set<Long> ids = new TreeSet<>();
            delivered.forEach(d -> ids.add(d.id()));
            assertEquals(MESSAGES, ids.size(), "each message delivered once");

            sub.ack(QueueCore.ackRange(TAG, ((TreeSet<Long>) ids).first(), ((TreeSet<Long>) ids).last()));
            assertEquals(0L, (long) QueueCore.onLoop(q, q.store()::unackedMessages), "all acknowledged by one frame");
            assertEquals(List.of(), consumer.all(ErrorFrame.class));
        }
    }
}
