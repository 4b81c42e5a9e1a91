package io.sluice.broker.queue;

import io.sluice.protocol.ErrorFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * drop-oldest with {@code deadLetterDropped}, and a dead-letter queue that refuses the copy (it cannot be created): the
 * message dropped is the oldest unacknowledged one, which no consumer may have read yet. Once its move has failed it is
 * delivered exactly once, and only to one consumer at a time, whether its retry comes before the reader reaches it or
 * after; and a message whose moves keep failing is moved once the dead-letter queue takes it.
 */
class RefusedDropMoveTest {
    private static final int TAG = 1;
    private static final int OTHER_TAG = 2;
    @TempDir
    Path dir;

    private static List<Long> ids(FakeConnection consumer) {
        return consumer.deliveries().stream().map(FakeConnection.Delivery::id).toList();
    }

    @Test
    void aNeverDeliveredMessageWhoseMoveFailedIsDeliveredOnceAfterItsRetryAndItsCreditIsSettled() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never", "queues.max-redelivery-delay-ms", "200"))) {
            BrokerQueue q = core.dropOldestQueueWithAFailedMove(new FakeConnection("producer"));
            QueueCore.awaitOnLoop(q, q::deadLetterRefusing, false); // the retry's delay is over, before any consumer came

            FakeConnection consumer = new FakeConnection("consumer");
            ConnectionCredit account = new ConnectionCredit(100, () -> { });
            Subscription sub = Subscription.open(q, consumer, TAG, 100, account);
            consumer.await(FakeConnection.Delivery.class, 6, Duration.ofSeconds(30));
            QueueCore.onLoop(q, () -> null); // the dispatch that delivered them has ended; no timer is left to make one due
            List<Long> delivered = ids(consumer);
            assertEquals(List.of(0L, 1L, 2L, 3L, 4L, 5L), delivered, "each message once, in store order");
            assertEquals(6, q.snapshot().get().consumers().get(0).unackedMessages(), "in flight, each once");

            sub.ack(QueueCore.ack(TAG, delivered.stream().mapToLong(Long::longValue).toArray())); // as the client acks: each delivery
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, 0L);
            sub.close().get();
            assertEquals(List.of(), consumer.all(ErrorFrame.class), "every ack named a delivery outstanding");
            assertEquals(0L, account.outstanding(), "the connection's credit is all settled");
        }
    }

    @Test
    void theRetryDoesNotHandAMessageTheReaderDeliveredMeanwhileToASecondConsumer() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never", "queues.max-redelivery-delay-ms", "1000"))) {
            BrokerQueue q = core.dropOldestQueueWithAFailedMove(new FakeConnection("producer"));
            FakeConnection first = new FakeConnection("first");
            Subscription.open(q, first, TAG, 100, QueueCore.unbounded());
            first.await(FakeConnection.Delivery.class, 6, Duration.ofSeconds(30));
            FakeConnection second = new FakeConnection("second");
            Subscription.open(q, second, OTHER_TAG, 100, QueueCore.unbounded());
            QueueCore.onLoop(q, () -> null); // the second consumer is subscribed, with credit, before the retry's delay ends

            QueueCore.awaitOnLoop(q, q::deadLetterRefusing, false);
            QueueCore.onLoop(q, () -> null); // a dispatch the retry asked for has run
            assertEquals(List.of(0L, 1L, 2L, 3L, 4L, 5L), ids(first));
            assertEquals(List.of(), ids(second), "the first consumer holds every message");
        }
    }

    /** The message the failed move left in the queue, untouched by consumers, is dropped (and moved) by a later publish. */
    @Test
    void aMessageWhoseMovesKeepFailingIsMovedOnceTheDeadLetterQueueTakesIt() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never", "queues.max-redelivery-delay-ms", "200"))) {
            FakeConnection producer = new FakeConnection("producer");
            BrokerQueue q = core.dropOldestQueueWithAFailedMove(producer);
            QueueCore.awaitOnLoop(q, q::deadLetterRefusing, false);
            core.publish(q, producer, 7, 7, new byte[] {7}); // drops message 0 again: its move fails again
            QueueCore.awaitOnLoop(q, q::deadLetterFailures, 2L);
            QueueCore.awaitOnLoop(q, q::deadLetterRefusing, false);

            core.queues.limitQueues(2); // q.dlq can be created now
            core.publish(q, producer, 7, 8, new byte[] {8});
            QueueCore.awaitOnLoop(q, q::dropped, 1L);
            BrokerQueue dlq = core.queues.get("q.dlq");
            assertEquals(1L, (long) QueueCore.onLoop(dlq, dlq.store()::unackedMessages));
            assertEquals(2L, (long) QueueCore.onLoop(q, q::deadLetterFailures));
            // Each failed move admitted its publish (docs/flow-control.md): 1..5 and the two publishes that made room.
            assertEquals(7L, (long) QueueCore.onLoop(q, q.store()::unackedMessages));

            FakeConnection consumer = new FakeConnection("consumer");
            Subscription.open(q, consumer, TAG, 100, QueueCore.unbounded());
            consumer.await(FakeConnection.Delivery.class, 7, Duration.ofSeconds(30));
            QueueCore.onLoop(q, () -> null);
            assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L, 7L), ids(consumer));
        }
    }
}
