package io.sluice.broker.queue;

import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * An acknowledgement that arrives after the ack timeout took the messages back, before they went
 * out again, still counts (issue 15, defect 6): for ranges of several ids as for one, and inside a transaction too.
 */
class LateAckTest {
    private static final int TAG = 3;
    @TempDir
    Path dir;

    @Test
    void aRangeAckOfMessagesTakenBackAfterTheirTimeoutAcknowledgesEveryOneOfThem() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            TakenBack late = threeTakenBack(core, QueueCore.unbounded());

            late.sub.ack(QueueCore.ackRange(TAG, late.delivered.get(0).id(), late.delivered.get(2).id()));
            assertEquals(0L, (long) QueueCore.onLoop(late.q, late.q.store()::unackedMessages), "all three acknowledged");
            assertEquals(List.of(), late.consumer.all(ErrorFrame.class));
            assertNothingDeliveredAgain(late);
        }
    }

    /**
     * A TX_ACK is an acknowledgement too (docs/transactions.md, "Held acknowledgements"): of deliveries the ack
     * timeout took back from its consumer and not yet sent again, it holds them as a late ACK acknowledges them, and the
     * commit acknowledges them. Before (found by a review), it found nothing outstanding on the consumer, and the
     * coordinator rolled the whole transaction back with UNKNOWN_MESSAGE_ID, where a plain ACK of the same ids counted.
     */
    @Test
    void aTxAckOfMessagesTakenBackAfterTheirTimeoutHoldsThemAndItsCommitAcknowledgesThem() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            ConnectionCredit account = QueueCore.unbounded();
            TakenBack late = threeTakenBack(core, account);
            List<Long> ids = late.delivered.stream().map(FakeConnection.Delivery::id).toList();

            HeldAcks held = late.sub.hold(List.of(new IdRange(ids.get(0), ids.get(2)))).get(10, TimeUnit.SECONDS);
            assertNull(held.problem(), "a TX_ACK of deliveries taken back and not sent again was refused");
            assertEquals(ids, Arrays.stream(held.ids()).boxed().toList());
            assertEquals(3, account.outstanding(), "their credit units went back at the timeout, not again at the TX_ACK");

            late.q.transactions().commit(new long[0], 0, 0, List.of(held)).get(10, TimeUnit.SECONDS);
            assertEquals(0L, (long) QueueCore.onLoop(late.q, late.q.store()::unackedMessages), "the commit acknowledged all three");
            assertNothingDeliveredAgain(late);
        }
    }

    @Test
    void aMessageTakenBackAfterItsTimeoutGoesOutAgainAndCountsOnceAsRedelivered() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            // 1 s, not 100 ms: the second delivery's ack must come before that delivery's own timeout, and on a loaded
            // machine the hand-over to the connection's thread and back took longer than 100 ms once (redelivered 2).
            BrokerQueue q = core.queues.declare("again", QueueSettings.builder().ackTimeoutMs(1000).build());
            FakeConnection producer = new FakeConnection("producer");
            FakeConnection consumer = new FakeConnection("consumer");
            core.publish(q, producer, 1, 0, new byte[10]);
            Subscription sub = Subscription.open(q, consumer, TAG, 0, QueueCore.unbounded());
            // The ack of the second delivery is queued when it is written, so it comes before that delivery's
            // timeout, however late this thread would run on a loaded machine.
            consumer.onDeliveries(2, () -> sub.ack(QueueCore.ack(TAG, consumer.deliveries().get(1).id())));
            sub.credit(1);
            List<FakeConnection.Delivery> both = consumer.await(FakeConnection.Delivery.class, 2, Duration.ofSeconds(30));
            assertEquals(both.get(0).id(), both.get(1).id());
            assertEquals(2, both.get(1).deliveryCount());
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, 0L);
            assertEquals(1L, (long) QueueCore.onLoop(q, q::redelivered), "taken back once, delivered again once: one redelivery");
        }
    }

    @Test
    void anotherConsumerCannotAckAMessageTakenBackFromTheFirst() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("guarded", QueueSettings.builder().ackTimeoutMs(100).build());
            FakeConnection producer = new FakeConnection("producer");
            FakeConnection first = new FakeConnection("first");
            FakeConnection other = new FakeConnection("other");
            core.publish(q, producer, 1, 0, new byte[10]);
            first.onDeliveries(1, () -> first.writable(false)); // slow from its delivery on, as in the first case
            Subscription.open(q, first, TAG, 1, QueueCore.unbounded());
            Subscription stranger = Subscription.open(q, other, TAG + 1, 0, QueueCore.unbounded()); // no credit: gets nothing
            long id = first.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30)).get(0).id();
            awaitTakenBack(q, 1);

            stranger.ack(QueueCore.ack(TAG + 1, id));
            other.await(io.sluice.protocol.ErrorFrame.class, 1, Duration.ofSeconds(30));
            assertEquals(1L, (long) QueueCore.onLoop(q, q.store()::unackedMessages), "the stranger's ack counts for nothing");
        }
    }

    /** A queue whose three messages its consumer received, and the ack timeout took back, with nothing sent again. */
    private record TakenBack(BrokerQueue q, FakeConnection consumer, Subscription sub, List<FakeConnection.Delivery> delivered) {
    }

    private static TakenBack threeTakenBack(QueueCore core, ConnectionCredit account) throws Exception {
        BrokerQueue q = core.queues.declare("late", QueueSettings.builder().ackTimeoutMs(100).build());
        FakeConnection producer = new FakeConnection("producer");
        FakeConnection consumer = new FakeConnection("consumer");
        core.publish(q, producer, 1, 0, new byte[10], new byte[10], new byte[10]);
        // The consumer is slow from its third delivery on: nothing can go out again for now. Set in the
        // dispatch itself, not after this thread saw the deliveries, which on a loaded machine could be
        // after the 100 ms ack timeout took them back and sent them again.
        consumer.onDeliveries(3, () -> consumer.writable(false));
        Subscription sub = Subscription.open(q, consumer, TAG, 3, account);
        List<FakeConnection.Delivery> delivered = consumer.await(FakeConnection.Delivery.class, 3, Duration.ofSeconds(30));
        awaitTakenBack(q, 3);
        return new TakenBack(q, consumer, sub, delivered);
    }

    /** The consumer can take more again: none of the three is delivered a second time. */
    private static void assertNothingDeliveredAgain(TakenBack late) throws Exception {
        late.consumer.writable(true);
        late.sub.writable();
        QueueCore.onLoop(late.q, () -> null); // the dispatch the wake-up scheduled has run
        QueueCore.onLoop(late.q, () -> null);
        assertEquals(3, late.consumer.deliveries().size(), "a message acknowledged is delivered again");
    }

    private static void awaitTakenBack(BrokerQueue q, long count) throws Exception {
        QueueCore.awaitOnLoop(q, q::redelivered, count); // the ack timer runs on the queue's clock
    }
}
