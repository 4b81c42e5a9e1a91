package io.sluice.broker.queue;

import io.sluice.protocol.FlowState;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The byte backlog has one unit, headers plus payload, whoever computes it (issue 15, defect 5): the
 * same after a restart and after a purge as while publishing, so byte quotas do not shift.
 */
class BacklogBytesTest {
    private static final Map<String, String> CONFIG = Map.of("storage.durability", "always");
    @TempDir
    Path dir;

    @Test
    void theByteBacklogIsTheSameAfterARestartAndAfterAPurge() throws Exception {
        QueueSettings settings = QueueSettings.builder().quotaBytes(2_500, 10_000).build();
        long expected = 0;
        try (QueueCore core = new QueueCore(dir, CONFIG)) {
            BrokerQueue q = core.queues.declare("sized", settings);
            FakeConnection producer = new FakeConnection("producer");
            for (int i = 0; i < 30; i++) {
                core.publish(q, producer, 1, i, new byte[100 + i]);
                expected += 100 + i;
            }
            assertEquals(30L, (long) QueueCore.onLoop(q, q.store()::unackedMessages)); // slowed: confirms wait for acks (C2)
            assertEquals(expected, (long) QueueCore.onLoop(q, q::backlogBytes), "while publishing");
            assertEquals(FlowState.SLOWED, QueueCore.onLoop(q, q::flowState), "past the soft level of 2,500 bytes");
        }
        try (QueueCore core = new QueueCore(dir, CONFIG)) {
            BrokerQueue q = core.queues.get("sized");
            assertEquals(expected, (long) QueueCore.onLoop(q, q::backlogBytes), "after a restart: the same unit");
            assertEquals(FlowState.SLOWED, QueueCore.onLoop(q, q::flowState), "and the same flow state");

            FakeConnection consumer = new FakeConnection("consumer");
            Subscription.open(q, consumer, 1, 1, QueueCore.unbounded());
            FakeConnection.Delivery held = consumer.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30)).get(0);
            assertEquals(29L, (long) q.purge().get());
            assertEquals((long) held.payload().length, (long) QueueCore.onLoop(q, q::backlogBytes),
                    "after a purge: the message still out with the consumer");
            assertEquals(FlowState.FREE, QueueCore.onLoop(q, q::flowState));
        }
    }
}
