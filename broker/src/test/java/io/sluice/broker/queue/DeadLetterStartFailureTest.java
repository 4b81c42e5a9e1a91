package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * A dead-letter move that cannot even start (the declare thread that would create the dead-letter queue refuses the task:
 * the broker is stopping, its queues still serve) is a failed move: counted, and each message delivered again after
 * {@code max-redelivery-delay-ms}. Found by a review: the throw left the message marked as on its way to the dead-letter
 * queue for good, never delivered nor moved, and the rejecting frame's later ids in no ready list and no consumer's hands.
 */
class DeadLetterStartFailureTest {
    private static final int TAG = 3;
    @TempDir
    Path dir;

    @Test
    void aMoveThatThrowsAtOnceIsAFailedMoveAndItsMessagesAreDeliveredAgain() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never",
                "queues.redelivery-delay-ms", "10", "queues.max-redelivery-delay-ms", "200"))) {
            BrokerQueue q = core.queues.declare("jobs", QueueSettings.EMPTY);
            core.publish(q, new FakeConnection("producer"), 1, 0, new byte[] {1}, new byte[] {2}, new byte[] {3});
            FakeConnection consumer = new FakeConnection("consumer");
            ConnectionCredit account = new ConnectionCredit(100, () -> { });
            Subscription sub = Subscription.open(q, consumer, TAG, 3, account);
            List<Long> ids = consumer.await(FakeConnection.Delivery.class, 3, Duration.ofSeconds(30)).stream()
                    .map(FakeConnection.Delivery::id).toList();
            core.queues.close(); // the declare thread stops; the queues go on serving until the broker closes them

            sub.nack(new NackFrame(TAG, NackAction.REJECT_TO_DEAD_LETTER, 0, List.of(new IdRange(ids.get(0), ids.get(2)))));

            assertEquals(3L, (long) QueueCore.onLoop(q, q::deadLetterFailures), "each move that could not start failed");
            assertEquals(0L, (long) QueueCore.onLoop(q, q::deadLettered));
            assertEquals(0L, account.outstanding(), "every rejected delivery is settled");
            sub.credit(3);
            List<FakeConnection.Delivery> again = consumer.await(FakeConnection.Delivery.class, 6, Duration.ofSeconds(30))
                    .subList(3, 6);
            assertEquals(ids, again.stream().map(FakeConnection.Delivery::id).toList(),
                    "each is delivered again after the retry's delay");
            assertEquals(List.of(2, 2, 2), again.stream().map(FakeConnection.Delivery::deliveryCount).toList());
            sub.ack(QueueCore.ackRange(TAG, ids.get(0), ids.get(2)));
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, 0L);
            assertEquals(0L, (long) QueueCore.onLoop(q, q::backlogBytes));
            assertNull(core.queues.get("jobs.dlq"), "no dead-letter queue was created");
        }
    }
}
