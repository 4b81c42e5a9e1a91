package io.sluice.broker.queue;

import io.sluice.broker.error.BrokerException;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Rule R7 of docs/replication.md on one queue of a cluster leader, with the log played by the test: a purge holds the
 * ids it picked out of dispatch and leaves the store as it is until their ACK entry is applied; not committed, they are
 * deliverable again, each once; applied, they are gone and the purge answers their count.
 */
class ClusterPurgeHoldTest {
    private static final int TAG = 5;
    private static final int STORED = 10;
    /** Delivered to the consumer before the purge, and not acknowledged: a purge leaves them. */
    private static final int OUT = 2;

    @TempDir
    Path dir;

    @Test
    void aPurgeThatIsNotCommittedChangesNoStoreAndItsMessagesAreDeliveredAgainOnce() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            Setup s = setUp(core);
            CompletableFuture<Long> answer = new CompletableFuture<>();
            LogStub.Submitted purge = purgeOnLeader(core, s.queue, answer);
            assertEquals(s.notOut, ids(purge.ids()), "the purge picks what is not out with the consumer");
            s.subscription.credit(STORED);
            QueueCore.onLoop(s.queue, () -> null); // the dispatch the credit asked for has run
            assertEquals(OUT, s.consumer.deliveries().size(), "nothing held is delivered while the purge's entry is in flight");
            assertEquals((long) STORED, (long) QueueCore.onLoop(s.queue, s.queue.store()::unackedMessages),
                    "the leader's store is untouched until the entry is applied");

            // This node stops leading (ClusterNode: leadershipLost on every queue), then Raft refuses the entry.
            s.queue.leadershipLost();
            purge.applied().completeExceptionally(new BrokerException(ErrorCode.NOT_LEADER, "node 1 is a follower"));
            ExecutionException failed = assertThrows(ExecutionException.class, () -> answer.get(30, TimeUnit.SECONDS));
            assertEquals(ErrorCode.NOT_LEADER, assertInstanceOf(BrokerException.class, failed.getCause()).code());

            List<FakeConnection.Delivery> all = s.consumer.await(FakeConnection.Delivery.class, STORED, Duration.ofSeconds(30));
            assertEquals(s.notOut, all.subList(OUT, STORED).stream().map(FakeConnection.Delivery::id).toList(),
                    "every held message is delivered again, in order");
            QueueCore.onLoop(s.queue, () -> null);
            assertEquals(STORED, s.consumer.deliveries().size(), "each once");
            assertEquals((long) STORED, (long) QueueCore.onLoop(s.queue, s.queue.store()::unackedMessages));
        }
    }

    @Test
    void aCommittedPurgeRemovesWhatItHeldWhenItsEntryIsAppliedAndAnswersTheCount() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            Setup s = setUp(core);
            CompletableFuture<Long> answer = new CompletableFuture<>();
            LogStub.Submitted purge = purgeOnLeader(core, s.queue, answer);
            assertEquals((long) STORED, (long) QueueCore.onLoop(s.queue, s.queue.store()::unackedMessages));
            s.queue.applyReplicatedAcks(purge.ids()); // the entry is applied here, as on every node (ShardApplier)
            QueueCore.onLoop(s.queue, () -> purge.applied().complete(null));
            assertEquals((long) (STORED - OUT), (long) answer.get(30, TimeUnit.SECONDS));
            assertEquals((long) OUT, (long) QueueCore.onLoop(s.queue, s.queue.store()::unackedMessages));

            s.queue.leadershipLost(); // nothing is held any more: nothing comes back
            s.subscription.credit(STORED);
            QueueCore.onLoop(s.queue, () -> null);
            QueueCore.onLoop(s.queue, () -> null);
            assertEquals(OUT, s.consumer.deliveries().size(), "nothing purged is delivered");
        }
    }

    /** A queue of {@link #STORED} messages whose first {@link #OUT} are out with a consumer; the ids of the others. */
    private record Setup(BrokerQueue queue, FakeConnection consumer, Subscription subscription, List<Long> notOut) {
    }

    private static Setup setUp(QueueCore core) throws Exception {
        BrokerQueue q = core.queues.declare("purged", QueueSettings.EMPTY);
        FakeConnection producer = new FakeConnection("producer");
        byte[][] payloads = new byte[STORED][];
        for (int i = 0; i < STORED; i++) {
            payloads[i] = new byte[] {(byte) i};
        }
        core.publish(q, producer, 1, 1, payloads);
        QueueCore.awaitOnLoop(q, q.store()::unackedMessages, (long) STORED);
        FakeConnection consumer = new FakeConnection("consumer");
        Subscription sub = Subscription.open(q, consumer, TAG, OUT, QueueCore.unbounded());
        List<FakeConnection.Delivery> out = consumer.await(FakeConnection.Delivery.class, OUT, Duration.ofSeconds(30));
        List<Long> notOut = new ArrayList<>();
        q.store().forEachUnacked(notOut::add);
        out.forEach(d -> notOut.remove(d.id()));
        return new Setup(q, consumer, sub, notOut);
    }

    /**
     * Makes {@code core} a cluster's leader whose log is {@link LogStub} and purges {@code queue} there; the purge's
     * answer goes to {@code answer}. Returns its entries as submitted, not applied yet.
     */
    private static LogStub.Submitted purgeOnLeader(QueueCore core, BrokerQueue queue, CompletableFuture<Long> answer) throws Exception {
        LogStub log = new LogStub();
        core.queues.replication(log);
        log.purge(queue).whenComplete((count, failure) -> {
            if (failure != null) {
                answer.completeExceptionally(failure);
            } else {
                answer.complete(count);
            }
        });
        LogStub.Submitted purge = log.purges.poll(30, TimeUnit.SECONDS);
        assertNotNull(purge, "the purge submitted no entry");
        return purge;
    }

    private static List<Long> ids(List<IdRange> ranges) {
        return ranges.stream().flatMapToLong(r -> LongStream.rangeClosed(r.from(), r.to())).boxed().toList();
    }
}
