package io.sluice.broker.queue;

import io.netty.buffer.ByteBufAllocator;
import io.sluice.broker.error.BrokerException;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * Rules R5 and R9 of docs/replication.md on one queue of a cluster leader whose store fails to read a message it gives
 * back when it stops leading (the log played by {@link LogStub}, the failing read by {@link BrokerQueue#readsThrough}).
 * Found by a review: the give-back read every message for its size, and {@code AckBatch.unapplied} and
 * {@code LeaderHold.giveBackAll} had emptied the sets it walked, so a read that threw left the ids after it in no set at
 * all: tracked or held, never delivered here again, never given back, until a restart. The give-back now reads nothing:
 * each message's size was kept when its ack or drop took it off the backlog, so a failing store gives everything back, and
 * a message it cannot read waits, due, for the store to read it again, as any due message does.
 */
class LeaderGiveBackReadFailureTest {
    private static final int TAG = 5;
    private static final long PRODUCER = 7;

    @TempDir
    Path dir;

    @Test
    void theAcksGivenBackAreAllDueAgainWhenOneCannotBeRead() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("acked", QueueSettings.EMPTY);
            core.publish(q, new FakeConnection("producer"), PRODUCER, 1, new byte[10], new byte[20], new byte[30]);
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, 3L);
            long backlog = QueueCore.onLoop(q, q::backlogBytes);
            FakeConnection consumer = new FakeConnection("consumer");
            Subscription sub = Subscription.open(q, consumer, TAG, 3, QueueCore.unbounded());
            List<Long> ids = ids(consumer.await(FakeConnection.Delivery.class, 3, Duration.ofSeconds(30)));
            LogStub log = new LogStub();
            core.queues.replication(log);

            sub.ack(QueueCore.ackRange(TAG, ids.get(0), ids.get(2))); // settled here, stored when its entry is applied (R5)
            assertNotNull(log.acks.poll(30, TimeUnit.SECONDS), "the acks are submitted");
            assertEquals(0L, (long) QueueCore.onLoop(q, q::backlogBytes), "settled: off the backlog");
            QueueCore.failReadsOf(q, ids.get(1));

            q.leadershipLost(); // the ACK entry may never commit
            assertEquals(backlog, (long) QueueCore.onLoop(q, q::backlogBytes), "all three count again, each with its bytes");
            assertEquals(3L, q.counters().get(30, TimeUnit.SECONDS).redelivered());
            sub.credit(3);
            consumer.await(FakeConnection.Delivery.class, 6, Duration.ofSeconds(30));
            QueueCore.onLoop(q, () -> null);
            assertEquals(List.of(ids.get(0), ids.get(1), ids.get(2), ids.get(0), ids.get(1), ids.get(2)),
                    ids(consumer.deliveries()), "all three are delivered again, each once, the unreadable one too");
            assertEquals(3L, (long) QueueCore.onLoop(q, q.store()::unackedMessages), "and nothing was acknowledged");
        }
    }

    @Test
    void theDropsGivenBackAreAllInTheQueueAgainWhenOneCannotBeRead() throws Exception {
        int stored = 5;
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("dropping", QueueSettings.builder()
                    .quotaMessages(0, stored).overflowPolicy("drop-oldest").build());
            FakeConnection producer = new FakeConnection("producer");
            core.publish(q, producer, PRODUCER, 1, new byte[1], new byte[2], new byte[3], new byte[4], new byte[5]);
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, (long) stored);
            long backlog = QueueCore.onLoop(q, q::backlogBytes);
            FakeConnection consumer = new FakeConnection("consumer");
            Subscription sub = Subscription.open(q, consumer, TAG, 1, QueueCore.unbounded());
            long out = consumer.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30)).get(0).id();
            LogStub log = new LogStub();
            core.queues.replication(log);

            List<LogStub.Submitted> drops = new ArrayList<>();
            for (long sequence = stored + 1; sequence <= stored + 2; sequence++) { // the queue is full: each publish drops one
                PublishFrameBuilder frame = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, q.name());
                frame.add(PRODUCER, sequence, List.of(), new byte[] {(byte) sequence});
                log.publish(q, producer, frame.build());
                LogStub.Submitted drop = log.drops.poll(30, TimeUnit.SECONDS);
                assertNotNull(drop, "the publish of " + sequence + " dropped nothing");
                drops.add(drop);
                assertEquals(1, log.publishes.poll(30, TimeUnit.SECONDS));
            }
            long first = drops.get(0).ids().get(0).from();
            long second = drops.get(1).ids().get(0).from();
            assertEquals(backlog - 2 - 3, (long) QueueCore.onLoop(q, q::backlogBytes), "the drops are off the backlog");
            QueueCore.failReadsOf(q, second);

            q.leadershipLost(); // the drops' entries may never commit
            for (LogStub.Submitted drop : drops) {
                drop.applied().completeExceptionally(new BrokerException(ErrorCode.NOT_LEADER, "node 1 is a follower"));
            }
            q.uncommittedRefused(2, 2);
            assertEquals(backlog, (long) QueueCore.onLoop(q, q::backlogBytes), "both drops count again, each with its bytes");
            assertEquals((long) stored, q.snapshot().get(30, TimeUnit.SECONDS).backlogMessages());

            sub.credit(stored);
            consumer.await(FakeConnection.Delivery.class, stored, Duration.ofSeconds(30));
            QueueCore.onLoop(q, () -> null);
            List<Long> storedIds = new ArrayList<>();
            QueueCore.onLoop(q, () -> {
                q.store().forEachUnacked(storedIds::add);
                return null;
            });
            assertEquals(List.of(out, first, second), storedIds.subList(0, 3));
            assertEquals(storedIds, ids(consumer.deliveries()), "every stored message is delivered, each once, both drops too");
            assertEquals(0L, (long) QueueCore.onLoop(q, q::dropped), "nothing was dropped");
        }
    }

    private static List<Long> ids(List<FakeConnection.Delivery> deliveries) {
        return deliveries.stream().map(FakeConnection.Delivery::id).toList();
    }
}
