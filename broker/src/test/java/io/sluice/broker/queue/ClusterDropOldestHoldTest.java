package io.sluice.broker.queue;

import io.sluice.broker.error.BrokerException;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.netty.buffer.ByteBufAllocator;
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
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Rule R9 of docs/replication.md on one queue of a cluster leader, with the log played by the test: a {@code drop-oldest}
 * drop holds the message it chose out of dispatch and out of the next drops, off the backlog, and leaves the store as it
 * is until the drop's ACK entry is applied; not committed, the message is in the backlog and deliverable again, once;
 * applied, it is gone and counted as dropped. While drops are held the queue admits against what they leave, as a
 * single broker would, dropping no more and no less.
 */
class ClusterDropOldestHoldTest {
    private static final int TAG = 5;
    /** The queue's hard quota, and what is stored before this node leads: the queue is full. */
    private static final int STORED = 5;
    private static final long PRODUCER = 7;

    @TempDir
    Path dir;

    @Test
    void aDropThatIsNotCommittedChangesNoStoreAndItsMessageIsDeliveredAgainOnce() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            Setup s = setUp(core);
            List<LogStub.Submitted> drops = publishTwoOnLeader(s);
            assertEquals(List.of(s.ids.get(1), s.ids.get(2)), dropIds(drops),
                    "each publish drops the oldest message neither out with the consumer nor dropped already");
            assertEquals(s.ids, storedIds(s.queue), "the leader's store is untouched until the entries are applied");
            assertEquals((long) STORED - 2, (long) QueueCore.onLoop(s.queue, s.queue::backlogBytes),
                    "the drops are off the backlog (one byte each)");
            assertEquals((long) STORED - 2, s.queue.snapshot().get(30, TimeUnit.SECONDS).backlogMessages(),
                    "and off the message count the admin API and the metrics report, as on a single broker");

            s.subscription.credit(STORED);
            s.consumer.await(FakeConnection.Delivery.class, 3, Duration.ofSeconds(30));
            QueueCore.onLoop(s.queue, () -> null); // the dispatch the credit asked for has run
            assertEquals(List.of(s.ids.get(0), s.ids.get(3), s.ids.get(4)), deliveredIds(s.consumer),
                    "nothing dropped is delivered while its entry is in flight");

            // This node stops leading (ClusterNode: leadershipLost on every queue), then Raft refuses the entries.
            s.queue.leadershipLost();
            for (LogStub.Submitted drop : drops) {
                drop.applied().completeExceptionally(new BrokerException(ErrorCode.NOT_LEADER, "node 1 is a follower"));
            }
            s.queue.uncommittedRefused(2, 2);
            s.consumer.await(FakeConnection.Delivery.class, STORED, Duration.ofSeconds(30));
            QueueCore.onLoop(s.queue, () -> null);
            assertEquals(List.of(s.ids.get(0), s.ids.get(3), s.ids.get(4), s.ids.get(1), s.ids.get(2)), deliveredIds(s.consumer),
                    "both messages are delivered again, each once");
            assertEquals(s.ids, storedIds(s.queue));
            assertEquals((long) STORED, (long) QueueCore.onLoop(s.queue, s.queue::backlogBytes), "back in the backlog");
            assertEquals((long) STORED, s.queue.snapshot().get(30, TimeUnit.SECONDS).backlogMessages(), "and counted again");
            assertEquals(0L, (long) QueueCore.onLoop(s.queue, s.queue::dropped), "nothing was dropped");
        }
    }

    @Test
    void aDropIsAppliedWithItsEntryAndTheQueueAdmitsAgainstWhatTheHeldDropsLeave() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            Setup s = setUp(core);
            List<LogStub.Submitted> drops = publishTwoOnLeader(s);

            // The consumer acknowledges what it holds (R5) and the entry is applied: four stored, two of them held drops,
            // two publishes uncommitted. A single broker would hold four now, so a fifth is admitted without a drop.
            s.subscription.ack(QueueCore.ack(TAG, s.ids.get(0)));
            List<IdRange> acked = s.log.acks.poll(30, TimeUnit.SECONDS);
            assertEquals(List.of(IdRange.single(s.ids.get(0))), acked);
            s.queue.applyReplicatedAcks(acked);
            publishOnLeader(s, 7);
            assertNotNull(s.log.publishes.poll(30, TimeUnit.SECONDS), "the publish is admitted");
            assertNull(s.log.drops.poll(), "with no drop: the held drops count as gone");

            s.queue.applyReplicatedAcks(drops.get(0).ids()); // the first drop's entry is applied here, as on every node
            QueueCore.onLoop(s.queue, () -> drops.get(0).applied().complete(null));
            assertEquals(s.ids.subList(2, STORED), storedIds(s.queue), "the applied drop is gone from the store");
            assertEquals(1L, (long) QueueCore.onLoop(s.queue, s.queue::dropped));
            assertEquals((long) STORED - 3, (long) QueueCore.onLoop(s.queue, s.queue::backlogBytes),
                    "applying the drop took nothing more off the backlog");
            assertEquals((long) STORED - 3, s.queue.snapshot().get(30, TimeUnit.SECONDS).backlogMessages(),
                    "nor off the message count: the other held drop is not counted either");

            s.queue.leadershipLost(); // the second drop is given back; the applied one is not
            drops.get(1).applied().completeExceptionally(new BrokerException(ErrorCode.NOT_LEADER, "node 1 is a follower"));
            s.subscription.credit(STORED);
            s.consumer.await(FakeConnection.Delivery.class, 4, Duration.ofSeconds(30));
            QueueCore.onLoop(s.queue, () -> null);
            assertEquals(List.of(s.ids.get(0), s.ids.get(2), s.ids.get(3), s.ids.get(4)), deliveredIds(s.consumer),
                    "the given-back drop is delivered (the reader had not passed it), the applied one never");
            assertEquals((long) STORED - 2, (long) QueueCore.onLoop(s.queue, s.queue::backlogBytes));
        }
    }

    /** A full queue of {@link #STORED} one-byte messages whose first is out with a consumer, on a leader whose log is {@link LogStub}. */
    private record Setup(BrokerQueue queue, FakeConnection producer, FakeConnection consumer, Subscription subscription,
                         List<Long> ids, LogStub log) {
    }

    private static Setup setUp(QueueCore core) throws Exception {
        BrokerQueue q = core.queues.declare("dropping", QueueSettings.builder()
                .quotaMessages(0, STORED).overflowPolicy("drop-oldest").build());
        FakeConnection producer = new FakeConnection("producer");
        byte[][] payloads = new byte[STORED][];
        for (int i = 0; i < STORED; i++) {
            payloads[i] = new byte[] {(byte) i};
        }
        core.publish(q, producer, PRODUCER, 0, payloads);
        QueueCore.awaitOnLoop(q, q.store()::unackedMessages, (long) STORED);
        FakeConnection consumer = new FakeConnection("consumer");
        Subscription sub = Subscription.open(q, consumer, TAG, 1, QueueCore.unbounded());
        consumer.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30));
        List<Long> ids = storedIds(q);
        LogStub log = new LogStub();
        core.queues.replication(log);
        return new Setup(q, producer, consumer, sub, ids, log);
    }

    /** Two publishes of one message each on the full queue, admitted by the leader: returns the two drops they submitted. */
    private static List<LogStub.Submitted> publishTwoOnLeader(Setup s) throws Exception {
        List<LogStub.Submitted> drops = new ArrayList<>();
        for (long sequence = STORED; sequence < STORED + 2; sequence++) {
            publishOnLeader(s, sequence);
            LogStub.Submitted drop = s.log.drops.poll(30, TimeUnit.SECONDS);
            assertNotNull(drop, "the publish of " + sequence + " dropped nothing");
            drops.add(drop);
            assertEquals(1, s.log.publishes.poll(30, TimeUnit.SECONDS), "the publish of " + sequence + " is submitted");
        }
        return drops;
    }

    private static void publishOnLeader(Setup s, long sequence) {
        PublishFrameBuilder frame = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, s.queue.name());
        frame.add(PRODUCER, sequence, List.of(), new byte[] {(byte) sequence});
        s.log.publish(s.queue, s.producer, frame.build());
    }

    private static List<Long> dropIds(List<LogStub.Submitted> drops) {
        return drops.stream().map(d -> d.ids().get(0).from()).toList();
    }

    private static List<Long> deliveredIds(FakeConnection consumer) {
        return consumer.deliveries().stream().map(FakeConnection.Delivery::id).toList();
    }

    private static List<Long> storedIds(BrokerQueue queue) throws Exception {
        return QueueCore.onLoop(queue, () -> {
            List<Long> ids = new ArrayList<>();
            queue.store().forEachUnacked(ids::add);
            return ids;
        });
    }
}
