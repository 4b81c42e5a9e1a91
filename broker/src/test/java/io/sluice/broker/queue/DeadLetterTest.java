package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Dead-lettering goes through the dead-letter queue itself (issue 15, defects 2 and 3): its quotas
 * and backlog count the message, the source lets go only once the copy is durable, and a failed
 * dead-letter leaves the message deliverable, counted.
 */
class DeadLetterTest {
    private static final int MAX_MESSAGE_BYTES = 4096;
    @TempDir
    Path dir;

    private QueueCore core() {
        return new QueueCore(dir, Map.of(
                "storage.durability", "always",
                "storage.max-message-bytes", Integer.toString(MAX_MESSAGE_BYTES),
                "queues.redelivery-delay-ms", "10",
                "queues.max-redelivery-delay-ms", "50"));
    }

    private static NackFrame reject(int tag, long id) {
        return new NackFrame(tag, NackAction.REJECT_TO_DEAD_LETTER, 0, List.of(IdRange.single(id)));
    }

    @Test
    void aMessageAtTheSizeLimitIsDeadLetteredWithItsHeadersAndCountedByTheDeadLetterQueue() throws Exception {
        try (QueueCore core = core()) {
            BrokerQueue q = core.queues.declare("jobs", QueueSettings.builder().deadLetterQueue("jobs.dead").build());
            FakeConnection producer = new FakeConnection("producer");
            FakeConnection consumer = new FakeConnection("consumer");
            byte[] payload = new byte[MAX_MESSAGE_BYTES - 10];
            Arrays.fill(payload, (byte) 'x');
            core.publish(q, producer, 9, 0, payload);
            Subscription sub = Subscription.open(q, consumer, 1, 1, QueueCore.unbounded());
            long id = consumer.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30)).get(0).id();
            sub.nack(reject(1, id));

            BrokerQueue dead = awaitQueue(core, "jobs.dead");
            FakeConnection inspector = new FakeConnection("inspector");
            Subscription deadSub = Subscription.open(dead, inspector, 2, 10, QueueCore.unbounded());
            FakeConnection.Delivery copy = inspector.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30)).get(0);
            assertArrayEquals(payload, copy.payload());
            assertEquals("jobs", copy.header(DeadLetterer.HEADER_FROM));
            assertEquals("rejected by the consumer", copy.header(DeadLetterer.HEADER_REASON));
            assertEquals(Long.toString(id), copy.header(DeadLetterer.HEADER_ORIGINAL_ID));
            QueueCore.awaitOnLoop(q, q::deadLettered, 1L); // once the copy is durable, not when it is delivered
            assertEquals(0L, (long) QueueCore.onLoop(q, q.store()::unackedMessages), "the source let it go");
            assertEquals(0L, (long) QueueCore.onLoop(q, q::backlogBytes));
            assertEquals(1L, (long) QueueCore.onLoop(q, q::deadLettered));

            long copyBytes = QueueCore.onLoop(dead, dead::backlogBytes);
            assertEquals(payload.length + headerBytes(copy), copyBytes, "the dead-letter queue counts the copy in its backlog");
            assertEquals(1L, dead.snapshot().get().counters().published());
            deadSub.ack(QueueCore.ack(2, copy.id()));
            assertEquals(0L, (long) QueueCore.onLoop(dead, dead::backlogBytes), "and its ack takes it off, to zero, not below");
        }
    }

    @Test
    void aQueueWhoseNameLeavesNoRoomForTheSuffixStillDeadLetters() throws Exception {
        try (QueueCore core = core()) {
            String name = "q".repeat(io.sluice.storage.QueueNames.MAX_LENGTH - 1); // its name and ".dlq" would be 203 characters
            BrokerQueue q = core.queues.declare(name, QueueSettings.EMPTY);
            String deadName = q.options().deadLetterQueue();
            assertEquals(true, io.sluice.storage.QueueNames.isValid(deadName), "a queue name: " + deadName);
            FakeConnection producer = new FakeConnection("producer");
            core.publish(q, producer, 3, 0, new byte[] {5});
            FakeConnection consumer = new FakeConnection("consumer");
            Subscription sub = Subscription.open(q, consumer, 1, 1, QueueCore.unbounded());
            long id = consumer.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30)).get(0).id();
            sub.nack(reject(1, id));

            BrokerQueue dead = awaitQueue(core, deadName);
            FakeConnection inspector = new FakeConnection("inspector");
            Subscription.open(dead, inspector, 2, 10, QueueCore.unbounded());
            FakeConnection.Delivery copy = inspector.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30)).get(0);
            assertArrayEquals(new byte[] {5}, copy.payload());
            assertEquals(name, copy.header(DeadLetterer.HEADER_FROM));
            QueueCore.awaitOnLoop(q, q::deadLettered, 1L);
            assertEquals(0L, (long) QueueCore.onLoop(q, q::deadLetterFailures));
            assertEquals(true, io.sluice.storage.QueueNames.isValid(dead.options().deadLetterQueue()),
                    "and so does the dead-letter queue's own: " + dead.options().deadLetterQueue());
        }
    }

    @Test
    void aDeadLetterQueueThatRefusesLeavesTheMessageDeliverableAndCountsTheFailure() throws Exception {
        try (QueueCore core = core()) {
            BrokerQueue dead = core.queues.declare("work.dead", QueueSettings.builder()
                    .quotaMessages(0, 1).overflowPolicy("reject").build());
            FakeConnection producer = new FakeConnection("producer");
            core.publish(dead, producer, 1, 0, new byte[8]); // the dead-letter queue is full
            BrokerQueue q = core.queues.declare("work", QueueSettings.builder().deadLetterQueue("work.dead").build());
            core.publish(q, producer, 2, 0, new byte[] {42});
            FakeConnection consumer = new FakeConnection("consumer");
            Subscription sub = Subscription.open(q, consumer, 1, 2, QueueCore.unbounded());
            long id = consumer.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30)).get(0).id();
            sub.nack(reject(1, id));

            List<FakeConnection.Delivery> again = consumer.await(FakeConnection.Delivery.class, 2, Duration.ofSeconds(30));
            assertEquals(id, again.get(1).id(), "back to the consumer after the delay");
            assertEquals(2, again.get(1).deliveryCount());
            assertEquals(1L, (long) QueueCore.onLoop(q, q::deadLetterFailures));
            assertEquals(0L, (long) QueueCore.onLoop(q, q::deadLettered));
            assertEquals(1L, (long) QueueCore.onLoop(q, q.store()::unackedMessages));
            assertEquals(1L, (long) QueueCore.onLoop(dead, dead.store()::unackedMessages), "nothing added past the quota");
        }
    }

    @Test
    void aDeadLetterQueueIsCreatedOnlyWithinTheQueueLimit() throws Exception {
        try (QueueCore core = core()) {
            core.queues.limitQueues(1);
            BrokerQueue q = core.queues.declare("lonely", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            core.publish(q, producer, 2, 0, new byte[] {7});
            FakeConnection consumer = new FakeConnection("consumer");
            Subscription sub = Subscription.open(q, consumer, 1, 2, QueueCore.unbounded());
            long id = consumer.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30)).get(0).id();
            sub.nack(reject(1, id));

            List<FakeConnection.Delivery> again = consumer.await(FakeConnection.Delivery.class, 2, Duration.ofSeconds(30));
            assertEquals(id, again.get(1).id());
            assertEquals(1L, (long) QueueCore.onLoop(q, q::deadLetterFailures));
            assertEquals(List.of("lonely"), core.queues.all().stream().map(BrokerQueue::name).toList(),
                    "limits.max-queues holds for dead-letter queues too");
        }
    }

    @Test
    void aMessageDropOldestIsMovingToTheDeadLetterQueueIsNotAlsoDelivered() throws Exception {
        try (QueueCore core = core()) {
            BrokerQueue q = core.queues.declare("full", QueueSettings.builder().quotaMessages(0, 1)
                    .overflowPolicy("drop-oldest").set(QueueOptions.DEAD_LETTER_DROPPED, true).build());
            core.queues.declare("full.dlq", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            FakeConnection consumer = new FakeConnection("consumer");
            core.publish(q, producer, 1, 0, new byte[] {0});
            core.publish(q, producer, 1, 1, new byte[] {1}); // drops message 0 to full.dlq
            Subscription.open(q, consumer, 1, 10, QueueCore.unbounded()); // before the copy is durable
            QueueCore.awaitOnLoop(q, q::deadLettered, 1L);
            QueueCore.onLoop(q, () -> null);
            List<FakeConnection.Delivery> got = consumer.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30));
            QueueCore.onLoop(q, () -> null);
            assertEquals(1, consumer.deliveries().size(), "only the message kept: " + consumer.deliveries());
            assertEquals(1, got.get(0).payload()[0]);
        }
    }

    private static BrokerQueue awaitQueue(QueueCore core, String name) throws InterruptedException {
        // The dead-letter queue is created on the declare thread.
        io.sluice.broker.TestAwait.until("queue " + name + " created", () -> core.queues.get(name) != null);
        return core.queues.get(name);
    }

    /** The encoded size of a delivery's headers, as the store keeps them: key length, key, value length, value. */
    private static long headerBytes(FakeConnection.Delivery d) {
        return d.headers().stream().mapToLong(h -> 2 + h.key().getBytes(java.nio.charset.StandardCharsets.UTF_8).length
                + 4 + h.value().length).sum();
    }
}
