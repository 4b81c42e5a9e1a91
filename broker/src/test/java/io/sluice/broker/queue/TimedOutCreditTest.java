package io.sluice.broker.queue;

import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * D1 with D5: the ack timeout gives a delivery's credit unit back to its consumer, and the consumer's client, which
 * cannot know, tops its credit up for that delivery again once it settles it (a late ACK, or an ACK of the copy
 * delivered since), as it does for every settlement. Found by a review: each such settlement left the consumer one
 * unit more than it granted, so a consumer slow enough to meet its ack timeout was sent more and more beyond its
 * window, and its connection's outstanding credit grew until its CREDITs were refused with RESOURCE_LIMIT.
 */
class TimedOutCreditTest {
    private static final int TAG = 4;

    @TempDir
    Path dir;

    @Test
    void aLateAckAndTheCreditThatReplacesItLeaveTheConsumerItsWindow() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = queueOfThree(core, "late");
            FakeConnection consumer = new FakeConnection("consumer");
            ConnectionCredit account = QueueCore.unbounded();
            // Slow from its first delivery on, set in the dispatch that sends it: nothing goes out again for now.
            consumer.onDeliveries(1, () -> consumer.writable(false));
            Subscription sub = Subscription.open(q, consumer, TAG, 1, account);
            long first = consumer.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30)).get(0).id();
            QueueCore.awaitOnLoop(q, q::redelivered, 1L); // taken back, its unit given back to the consumer

            // The client acks it late and, having settled one message, grants one unit for it.
            sub.ack(QueueCore.ack(TAG, first));
            sub.credit(1);
            readsAgainUntil(q, consumer, sub, 2);

            assertEquals(2, consumer.deliveries().size(), "a window of one: the first message, then one more");
            assertEquals(1L, account.outstanding(), "the connection's outstanding credit is the consumer's window");
        }
    }

    @Test
    void acksOfBothCopiesOfAMessageRedeliveredToTheSameConsumerLeaveItsWindow() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = queueOfThree(core, "twice");
            FakeConnection consumer = new FakeConnection("consumer");
            ConnectionCredit account = QueueCore.unbounded();
            Subscription[] sub = new Subscription[1];
            // The first copy times out and goes to the same consumer again; the client acks the first copy in the
            // dispatch that sends the second (before any later timeout), and the consumer is slow from then on.
            consumer.onDeliveries(2, () -> {
                consumer.writable(false);
                sub[0].ack(QueueCore.ack(TAG, consumer.deliveries().get(0).id()));
            });
            sub[0] = Subscription.open(q, consumer, TAG, 1, account);
            List<FakeConnection.Delivery> copies = consumer.await(FakeConnection.Delivery.class, 2, Duration.ofSeconds(30));
            assertEquals(copies.get(0).id(), copies.get(1).id());
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, 2L);

            // Then it acks the second copy (not outstanding any more: an ERROR) and grants two units for the two settled.
            sub[0].ack(QueueCore.ack(TAG, copies.get(1).id()));
            sub[0].credit(2);
            readsAgainUntil(q, consumer, sub[0], 3);

            assertEquals(3, consumer.deliveries().size(), "a window of one: the two copies, then one more message");
            assertEquals(1L, account.outstanding(), "the connection's outstanding credit is the consumer's window");
        }
    }

    /** A queue with an ack timeout of 100 ms and three messages. */
    private static BrokerQueue queueOfThree(QueueCore core, String name) {
        BrokerQueue q = core.queues.declare(name, QueueSettings.builder().ackTimeoutMs(100).build());
        core.publish(q, new FakeConnection("producer"), 1, 0, new byte[10], new byte[10], new byte[10]);
        return q;
    }

    /**
     * The consumer reads again, and is slow again from its {@code deliveries}-th delivery on, set in the dispatch that
     * sends it: what that dispatch sends is all its credit allowed. Returns once that dispatch has run.
     */
    private static void readsAgainUntil(BrokerQueue q, FakeConnection consumer, Subscription sub, int deliveries) throws Exception {
        consumer.onDeliveries(deliveries, () -> consumer.writable(false));
        consumer.writable(true);
        sub.writable();
        QueueCore.onLoop(q, () -> null); // the dispatch the wake-up scheduled has run
        QueueCore.onLoop(q, () -> null);
    }
}
