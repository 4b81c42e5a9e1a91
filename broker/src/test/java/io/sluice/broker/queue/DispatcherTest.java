package io.sluice.broker.queue;

import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.StoredMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * {@link Dispatcher} over a real store: three messages stored in a queue that has no consumer of its
 * own, dispatched on the queue's executor to sessions of {@link FakeConnection}s the test makes.
 */
class DispatcherTest {
    @TempDir
    Path dir;
    private QueueCore core;
    private BrokerQueue q;
    private IdSet tracked;
    private IdSet pending;
    private DeliveryOrder order;
    private Dispatcher dispatcher;
    private final List<String> deadLettered = new ArrayList<>();

    @BeforeEach
    void storeThreeMessages() throws Exception {
        core = new QueueCore(dir, Map.of("storage.durability", "never"));
        q = core.queues.declare("q", QueueSettings.builder().build());
        FakeConnection producer = new FakeConnection("producer");
        core.publish(q, producer, 1, 0, new byte[] {0}, new byte[] {1}, new byte[] {2});
        producer.await(ConfirmFrame.class, 1, Duration.ofSeconds(30));
        QueueCore.onLoop(q, () -> {
            tracked = new IdSet();
            pending = new IdSet();
            order = new DeliveryOrder(q.store(), tracked, pending, new LeaderHold(), q.executor(), () -> { });
            order.openReader();
            dispatcher = new Dispatcher("q", order, tracked, new DeliveryFrames("q", q.store()),
                    (StoredMessage m, int deliveries, String reason) -> deadLettered.add(m.payloadLength() + " " + reason));
            return null;
        });
    }

    @AfterEach
    void close() throws Exception {
        QueueCore.onLoop(q, () -> {
            order.close();
            return null;
        });
        core.close();
    }

    @Test
    void shouldDeliverRoundRobinWithinEachConsumersCreditAndTrackEveryDelivery() throws Exception {
        FakeConnection a = new FakeConnection("a");
        FakeConnection b = new FakeConnection("b");
        ConsumerSession first = session(a, 1, 2);
        ConsumerSession second = session(b, 2, 2);

        assertEquals(3, dispatch(List.of(first, second), 10));
        assertEquals(List.of(0L, 2L), payloads(a));
        assertEquals(List.of(1L), payloads(b));
        assertEquals(List.of(0L, 1L), QueueCore.onLoop(q, () -> List.of(first.credit, second.credit)));
        assertEquals(List.of(2, 1), QueueCore.onLoop(q, () -> List.of(first.inFlight.size(), second.inFlight.size())));
        assertEquals(3, (int) QueueCore.onLoop(q, tracked::size));
    }

    @Test
    void shouldSkipAConsumerWhoseConnectionCannotTakeMoreAndTakeNothingWithoutCredit() throws Exception {
        FakeConnection full = new FakeConnection("full");
        full.writable(false);
        FakeConnection broke = new FakeConnection("broke");
        assertEquals(0, dispatch(List.of(session(full, 1, 5), session(broke, 2, 0)), 10));

        FakeConnection ready = new FakeConnection("ready");
        assertEquals(1, dispatch(List.of(session(ready, 3, 1)), 10));
        assertEquals(List.of(0L), payloads(ready), "nothing was taken from the order while no one could receive");
        assertEquals(List.of(), full.deliveries());
    }

    @Test
    void shouldDeadLetterAMessageOneMoreDeliveryWouldTakePastTheLimitInsteadOfDeliveringIt() throws Exception {
        FakeConnection a = new FakeConnection("a");
        ConsumerSession consumer = session(a, 1, 1);
        assertEquals(1, dispatch(List.of(consumer), 1));
        long id = a.deliveries().get(0).id();
        QueueCore.onLoop(q, () -> {
            consumer.inFlight.removeAll();
            consumer.credit = 3;
            order.due(id); // as if taken back: due first, its one delivery recorded
            return null;
        });

        assertEquals(2, dispatch(List.of(consumer), 1));
        assertEquals(List.of("1 delivered 1 times without an acknowledgement (max-deliveries 1)"), deadLettered);
        assertEquals(List.of(0L, 1L, 2L), payloads(a));
        assertEquals(1L, (long) QueueCore.onLoop(q, () -> consumer.credit), "the dead-lettered message took no credit");
    }

    @Test
    void shouldPassAMessageATransactionStagedWithoutStoppingAndDeliverItOnceItsTransactionCommits() throws Exception {
        long staged = QueueCore.onLoop(q, () -> {
            long id = q.store().appendStaged(42, ByteBuffer.wrap(new byte[] {9}), 0, 0, 0, 1);
            pending.add(id); // as QueueTransactions.stage marks it
            order.appendedVisible(q.store().append(0, 0, null, ByteBuffer.wrap(new byte[] {3}))); // as a publish tells it
            return id;
        });
        FakeConnection a = new FakeConnection("a");
        ConsumerSession consumer = session(a, 1, 10);

        assertEquals(4, dispatch(List.of(consumer), 10), "the pending message is passed, the one after it delivered");
        assertEquals(List.of(0L, 1L, 2L, 3L), payloads(a));
        QueueCore.onLoop(q, () -> {
            pending.remove(staged);
            order.madeVisible(staged); // its transaction committed
            return null;
        });
        assertEquals(1, dispatch(List.of(consumer), 10));
        assertEquals(List.of(0L, 1L, 2L, 3L, 9L), payloads(a), "due once visible, though the reader had passed it");
        assertEquals(0, dispatch(List.of(consumer), 10), "delivered once");
    }

    @Test
    void shouldDeliverAStagedMessageInStoreOrderIfItsTransactionCommittedBeforeTheReaderGotThere() throws Exception {
        QueueCore.onLoop(q, () -> {
            long id = q.store().appendStaged(42, ByteBuffer.wrap(new byte[] {9}), 0, 0, 0, 1);
            order.appendedVisible(q.store().append(0, 0, null, ByteBuffer.wrap(new byte[] {3})));
            order.madeVisible(id); // never pending when the reader reads it
            return null;
        });
        FakeConnection a = new FakeConnection("a");
        assertEquals(5, dispatch(List.of(session(a, 1, 10)), 10));
        assertEquals(List.of(0L, 1L, 2L, 9L, 3L), payloads(a));
    }

    @Test
    void shouldWaitAtPendingMessagesWithNothingVisibleAfterThemAndDeliverThemInStoreOrderOnceCommitted() throws Exception {
        long[] staged = QueueCore.onLoop(q, () -> {
            long[] ids = {q.store().appendStaged(42, ByteBuffer.wrap(new byte[] {9}), 0, 0, 0, 1),
                          q.store().appendStaged(42, ByteBuffer.wrap(new byte[] {8}), 0, 0, 0, 1)};
            pending.add(ids[0]);
            pending.add(ids[1]);
            return ids;
        });
        FakeConnection a = new FakeConnection("a");
        ConsumerSession consumer = session(a, 1, 10);
        assertEquals(3, dispatch(List.of(consumer), 10));
        boolean due = QueueCore.onLoop(q, () -> {
            for (long id : staged) {
                pending.remove(id);
                order.madeVisible(id);
            }
            return order.hasDue();
        });
        assertFalse(due, "the reader waited at them: nothing to read again by id");
        assertEquals(2, dispatch(List.of(consumer), 10));
        assertEquals(List.of(0L, 1L, 2L, 9L, 8L), payloads(a));
    }

    private ConsumerSession session(FakeConnection connection, int tag, long credit) {
        return new ConsumerSession(connection, tag, credit, QueueCore.unbounded());
    }

    private int dispatch(List<ConsumerSession> consumers, int maxDeliveries) throws Exception {
        return QueueCore.onLoop(q, () -> dispatcher.dispatch(consumers, maxDeliveries));
    }

    /** The first payload byte of each message delivered to {@code connection}, in order. */
    private static List<Long> payloads(FakeConnection connection) {
        return connection.deliveries().stream().map(d -> (long) d.payload()[0]).toList();
    }
}
