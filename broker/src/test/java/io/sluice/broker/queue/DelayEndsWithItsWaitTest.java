package io.sluice.broker.queue;

import io.sluice.broker.error.BrokerException;
import io.sluice.protocol.ErrorCode;
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
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * Rule D7 of docs/broker-core.md, "a delay ends with its wait": a message waiting out a NACK's requeue delay or a failed
 * dead-letter move's retry that something else takes out of that wait (a cluster leader's purge or drop, which gives it
 * back when its entry does not commit; a drop-oldest drop) is not made due by the old timer. Given back and delivered
 * again, the message is out with one consumer: made due once more, it went out to that consumer a second time while it
 * held it (or to another).
 *
 * <p>Each test waits on the queue's executor for a task scheduled after the timer with the same delay: Netty runs
 * scheduled tasks in deadline order, so the timer has run (or was cancelled) by then, and the dispatch it asked for runs
 * before the next task handed to the executor.
 */
class DelayEndsWithItsWaitTest {
    /** The NACK's delay and the queue's longest redelivery delay, so also a failed move's retry. */
    private static final long DELAY_MS = 1000;
    private static final Map<String, String> CONFIG = Map.of("storage.durability", "never",
            "queues.max-redelivery-delay-ms", Long.toString(DELAY_MS));
    private static final int FIRST = 1;
    private static final int SECOND = 2;
    private static final long PRODUCER = 7;

    @TempDir
    Path dir;

    @Test
    void aNackDelayEndsWhenALeadersPurgeHoldsTheMessage() throws Exception {
        try (QueueCore core = new QueueCore(dir, CONFIG)) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            List<Long> ids = publishThree(core, q);
            FakeConnection first = new FakeConnection("first");
            nack(q, holdsTheOldest(q, first, ids), NackAction.REQUEUE_AFTER_DELAY, ids.get(0));

            aPurgeNotCommittedGivesEachBackOnce(core, q, ids);
            assertEquals(List.of(ids.get(0)), deliveredIds(first));
        }
    }

    @Test
    void aNackDelayEndsWhenALeadersDropHoldsTheMessage() throws Exception {
        try (QueueCore core = new QueueCore(dir, CONFIG)) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.builder().quotaMessages(0, 3).overflowPolicy("drop-oldest").build());
            List<Long> ids = publishThree(core, q);
            nack(q, holdsTheOldest(q, new FakeConnection("first"), ids), NackAction.REQUEUE_AFTER_DELAY, ids.get(0));

            LogStub log = new LogStub();
            core.queues.replication(log);
            log.publish(q, new FakeConnection("producer"), oneMessage(q, 3)); // at the hard quota: drops the oldest
            LogStub.Submitted drop = log.drops.poll(30, TimeUnit.SECONDS);
            assertNotNull(drop, "the publish dropped nothing");
            assertEquals(List.of(IdRange.single(ids.get(0))), drop.ids(), "the message waiting out its delay is the oldest");
            assertEquals(1, log.publishes.poll(30, TimeUnit.SECONDS));
            // This node stops leading (ClusterNode: leadershipLost on every queue), then Raft refuses both entries.
            q.leadershipLost();
            drop.applied().completeExceptionally(new BrokerException(ErrorCode.NOT_LEADER, "node 1 is a follower"));
            q.uncommittedRefused(1, 1);

            FakeConnection second = secondConsumer(q, 3);
            waitPastTheDelay(q);
            assertEquals(ids, deliveredIds(second), "the given-back drop is delivered once, with the others");
        }
    }

    @Test
    void aFailedDeadLetterMovesRetryEndsWhenALeadersPurgeHoldsTheMessage() throws Exception {
        try (QueueCore core = new QueueCore(dir, CONFIG)) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            core.queues.limitQueues(1); // q.dlq cannot be created: every move fails
            List<Long> ids = publishThree(core, q);
            nack(q, holdsTheOldest(q, new FakeConnection("first"), ids), NackAction.REJECT_TO_DEAD_LETTER, ids.get(0));
            QueueCore.awaitOnLoop(q, q::deadLetterFailures, 1L); // the reader passed it: delivered again after its retry

            aPurgeNotCommittedGivesEachBackOnce(core, q, ids);
        }
    }

    /** A single broker: the drop ends the NACK's delay; its failed move starts the retry's, which alone delivers it. */
    @Test
    void aNackDelayEndsWhenDropOldestTakesTheMessageForTheDeadLetterQueue() throws Exception {
        try (QueueCore core = new QueueCore(dir, CONFIG)) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.builder().quotaMessages(0, 3).overflowPolicy("drop-oldest")
                    .set(QueueOptions.DEAD_LETTER_DROPPED, true).build());
            core.queues.limitQueues(1); // q.dlq cannot be created: the dropped message's move fails and it stays
            List<Long> ids = publishThree(core, q);
            nack(q, holdsTheOldest(q, new FakeConnection("first"), ids), NackAction.REQUEUE_AFTER_DELAY, ids.get(0));

            core.publish(q, new FakeConnection("producer"), PRODUCER, 3, new byte[] {3}); // at the hard quota: drops the oldest
            QueueCore.awaitOnLoop(q, q::deadLetterFailures, 1L);
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, 4L); // the failed move admitted the publish

            FakeConnection second = secondConsumer(q, 3);
            waitPastTheDelay(q);
            assertEquals(List.of(ids.get(1), ids.get(2), ids.get(2) + 1, ids.get(0)), deliveredIds(second),
                    "the store's messages, then the dropped one once, after its move's retry");
            assertEquals(0L, (long) QueueCore.onLoop(q, q::dropped));
        }
    }

    private static List<Long> publishThree(QueueCore core, BrokerQueue q) throws Exception {
        core.publish(q, new FakeConnection("producer"), PRODUCER, 0, new byte[] {0}, new byte[] {1}, new byte[] {2});
        QueueCore.awaitOnLoop(q, q.store()::unackedMessages, 3L);
        return QueueCore.onLoop(q, () -> {
            List<Long> ids = new java.util.ArrayList<>();
            q.store().forEachUnacked(ids::add);
            return ids;
        });
    }

    /** Subscribes {@code first} with credit for one: it is delivered the oldest message, and the reader is past it. */
    private static Subscription holdsTheOldest(BrokerQueue q, FakeConnection first, List<Long> ids) throws Exception {
        Subscription subscription = Subscription.open(q, first, FIRST, 1, QueueCore.unbounded());
        first.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30));
        assertEquals(List.of(ids.get(0)), deliveredIds(first));
        return subscription;
    }

    private static void nack(BrokerQueue q, Subscription subscription, NackAction action, long id) throws Exception {
        long delayMs = action == NackAction.REQUEUE_AFTER_DELAY ? DELAY_MS : 0; // the frame takes a delay for that action alone
        subscription.nack(new NackFrame(FIRST, action, delayMs, List.of(IdRange.single(id))));
        QueueCore.onLoop(q, () -> null);
    }

    /**
     * Makes {@code core} a cluster's leader whose log is {@link LogStub} and purges {@code q}, whose messages {@code ids}
     * are all waiting, and Raft refuses the entry; then a second consumer is delivered each once, past the delay.
     */
    private static void aPurgeNotCommittedGivesEachBackOnce(QueueCore core, BrokerQueue q, List<Long> ids) throws Exception {
        LogStub log = new LogStub();
        core.queues.replication(log);
        log.purge(q);
        LogStub.Submitted purge = log.purges.poll(30, TimeUnit.SECONDS);
        assertNotNull(purge, "the purge submitted no entry");
        assertEquals(List.of(new IdRange(ids.get(0), ids.get(2))), purge.ids(), "the purge holds every message, none being out");
        purge.applied().completeExceptionally(new BrokerException(ErrorCode.NOT_LEADER, "refused"));

        FakeConnection second = secondConsumer(q, 3);
        waitPastTheDelay(q);
        assertEquals(ids, deliveredIds(second), "the given-back message is delivered once, with the others");
    }

    /** A second consumer, with room for more than there is: waits for its first {@code count} deliveries. */
    private static FakeConnection secondConsumer(BrokerQueue q, int count) throws Exception {
        FakeConnection second = new FakeConnection("second");
        Subscription.open(q, second, SECOND, 10, QueueCore.unbounded());
        second.await(FakeConnection.Delivery.class, count, Duration.ofSeconds(30));
        return second;
    }

    /** Waits until every delay set so far has ended, and the dispatch it asked for has run (see the class comment). */
    private static void waitPastTheDelay(BrokerQueue q) throws Exception {
        q.executor().schedule(() -> null, DELAY_MS, TimeUnit.MILLISECONDS).get(30, TimeUnit.SECONDS);
        QueueCore.onLoop(q, () -> null);
    }

    private static io.sluice.protocol.PublishFrame oneMessage(BrokerQueue q, long sequence) {
        io.sluice.protocol.PublishFrameBuilder frame = new io.sluice.protocol.PublishFrameBuilder(
                io.netty.buffer.ByteBufAllocator.DEFAULT, q.name());
        frame.add(PRODUCER, sequence, List.of(), new byte[] {(byte) sequence});
        return frame.build();
    }

    private static List<Long> deliveredIds(FakeConnection consumer) {
        return consumer.deliveries().stream().map(FakeConnection.Delivery::id).toList();
    }
}
