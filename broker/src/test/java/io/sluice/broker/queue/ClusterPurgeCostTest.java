package io.sluice.broker.queue;

import io.netty.buffer.ByteBufAllocator;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishFrameBuilder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R7 of docs/replication.md at scale: a cluster leader purging a large backlog, and a follower applying the purge's
 * entries, each with the log played by the test (the leader's {@link LogStub}, the follower's applies what the leader
 * submitted). The leader held every purged id one by one until its entries were applied (a set of them, and their ids
 * listed again as ranges), and every node's apply handled each id (a read of each message for its size), so the heap
 * and the event loop a purge took grew with the backlog: a backlog of ten million was a gigabyte, past the launcher's
 * heap (found by a review; docs/broker-core.md has the figures). Now the purge holds and applies ranges, the gaps between
 * what it keeps; this test bounds what it allocates on each node's loop far below a long a message, and checks that the
 * outcome is exact and the same on both nodes: what was removed, what each keeps (the messages out with the leader's
 * consumer, those stored after the leader picked), and that the entries applied again (a replay) remove nothing more.
 * The loops' CPU times are printed, not asserted: a timing belongs in a benchmark.
 */
class ClusterPurgeCostTest {
    private static final int BACKLOG = 500_000;
    /** Among the first messages, every third was acknowledged before the purge, on every node: holes in what it removes. */
    private static final int ACKED_BEFORE = 10_000;
    /** Delivered to the leader's consumer and not acknowledged: the purge leaves them. */
    private static final int OUT = 3;
    /** Stored on every node after the leader picked what to purge, before its entries: not the purge's to remove. */
    private static final int STORED_AFTER = 5;
    /** A purge first run on a small queue of the same loop, long enough to take the path a large one takes. */
    private static final int WARM_UP = 1_000;
    /**
     * Far below a long a message (a walk keeping every id in an array would pass it), far above the purge's own
     * allocation: the loop's count also takes in whatever else ran on it meanwhile (one CI run saw 288 KiB).
     */
    private static final long MAX_LOOP_ALLOCATED_BYTES = 2 << 20;

    /** A cluster node's storage: it never relocates stragglers, which would move ids on one node alone (R2). */
    private static final Map<String, String> NODE = Map.of("storage.durability", "never", "storage.relocate-max-live-messages", "0");

    @TempDir
    Path dir;

    @Test
    void aLeadersPurgeOfALargeBacklogHoldsAndAppliesRangesWithTheSameOutcomeOnEveryNode() throws Exception {
        Path leaderDir = dir.resolve("leader");
        Path followerDir = dir.resolve("follower");
        QueueCore.writeBacklog(leaderDir, "big", BACKLOG); // the same messages, under the same ids, on both nodes
        QueueCore.writeBacklog(followerDir, "big", BACKLOG);
        try (QueueCore leader = new QueueCore(leaderDir, NODE);
             QueueCore follower = new QueueCore(followerDir, NODE)) {
            BrokerQueue lq = leader.queues.get("big");
            BrokerQueue fq = follower.queues.get("big");
            List<IdRange> earlierAcks = new ArrayList<>();
            long firstId = QueueCore.onLoop(lq, () -> lq.store().oldestUnacked(id -> false, 0));
            for (int i = 0; i < ACKED_BEFORE; i += 3) {
                earlierAcks.add(IdRange.single(firstId + i));
            }
            for (BrokerQueue q : List.of(lq, fq)) { // a consumer's acks, applied on every node
                q.applyReplicatedAcks(earlierAcks);
                QueueCore.awaitOnLoop(q, q.store()::unackedMessages, (long) (BACKLOG - earlierAcks.size()));
            }
            BrokerQueue warm = leader.queues.declare("warm", io.sluice.protocol.QueueSettings.EMPTY);
            byte[][] warmPayloads = new byte[WARM_UP][];
            java.util.Arrays.fill(warmPayloads, new byte[] {3});
            leader.publish(warm, new FakeConnection("producer"), 1, 1, warmPayloads);
            QueueCore.awaitOnLoop(warm, warm.store()::unackedMessages, (long) WARM_UP);
            LogStub log = new LogStub();
            leader.queues.replication(log);
            CompletableFuture<Long> warmed = log.purge(warm); // the purge's classes loaded and its code run once
            LogStub.Submitted warmPurge = log.purges.poll(30, TimeUnit.SECONDS);
            assertNotNull(warmPurge, "the purge submitted no entry");
            warm.applyReplicatedAcks(warmPurge.ids());
            QueueCore.onLoop(warm, () -> warmPurge.applied().complete(null));
            assertEquals(WARM_UP, (long) warmed.get(30, TimeUnit.SECONDS));
            FakeConnection consumer = new FakeConnection("consumer");
            Subscription.open(lq, consumer, 5, OUT, QueueCore.unbounded());
            List<Long> out = consumer.await(FakeConnection.Delivery.class, OUT, Duration.ofSeconds(30)).stream()
                    .map(FakeConnection.Delivery::id).toList();

            com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            long leaderLoop = QueueCore.onLoop(lq, () -> Thread.currentThread().getId());
            long followerLoop = QueueCore.onLoop(fq, () -> Thread.currentThread().getId());
            long[] leaderCost = cost(threads, leaderLoop, null);
            CompletableFuture<Long> answer = log.purge(lq);
            LogStub.Submitted purge = log.purges.poll(30, TimeUnit.SECONDS);
            assertNotNull(purge, "the purge submitted no entry");
            QueueCore.onLoop(lq, () -> null);
            leaderCost = cost(threads, leaderLoop, leaderCost);
            List<Long> storedAfter = new ArrayList<>();
            for (BrokerQueue q : List.of(lq, fq)) { // entries before the purge's in the log, applied after the leader picked
                storedAfter = publishApplied(q);
            }
            long[] leaderApply = cost(threads, leaderLoop, null);
            lq.applyReplicatedAcks(purge.ids()); // the purge's entries, applied on the leader as on every node
            QueueCore.onLoop(lq, () -> purge.applied().complete(null));
            long removed = answer.get(30, TimeUnit.SECONDS);
            QueueCore.onLoop(lq, () -> null);
            leaderApply = cost(threads, leaderLoop, leaderApply);
            long leaderCpu = leaderCost[0] + leaderApply[0];
            long leaderAllocated = leaderCost[1] + leaderApply[1];

            long followerCpu = threads.getThreadCpuTime(followerLoop);
            long followerAllocated = threads.getThreadAllocatedBytes(followerLoop);
            fq.applyReplicatedAcks(purge.ids());
            QueueCore.onLoop(fq, () -> null);
            followerCpu = threads.getThreadCpuTime(followerLoop) - followerCpu;
            followerAllocated = threads.getThreadAllocatedBytes(followerLoop) - followerAllocated;
            System.out.println("cluster purge of " + removed + " messages in " + purge.ids().size() + " id ranges: leader "
                    + leaderCpu / 1000 + " us of its loop's CPU and " + leaderAllocated + " bytes allocated on it, follower "
                    + followerCpu / 1000 + " us and " + followerAllocated + " bytes");

            assertEquals(BACKLOG - earlierAcks.size() - OUT, removed, "the count is exact");
            List<Long> kept = new ArrayList<>(out);
            kept.addAll(storedAfter);
            assertEquals(kept, unacked(lq), "the leader keeps what is out with its consumer and what was stored since");
            assertEquals(kept, unacked(fq), "the follower keeps the same messages");
            for (BrokerQueue q : List.of(lq, fq)) {
                assertEquals((long) kept.size(), (long) QueueCore.onLoop(q, q::backlogBytes), "one byte a message is left");
            }
            assertTrue(leaderAllocated < MAX_LOOP_ALLOCATED_BYTES, "the leader's purge of " + removed + " messages allocated "
                    + leaderAllocated + " bytes on the queue's event loop");
            assertTrue(followerAllocated < MAX_LOOP_ALLOCATED_BYTES, "the follower's apply of a purge of " + removed
                    + " messages allocated " + followerAllocated + " bytes on the queue's event loop");

            fq.applyReplicatedAcks(purge.ids()); // a replay of the entries removes nothing more
            assertEquals(kept, unacked(fq), "a replayed purge removes what it removed the first time, no more");
        }
    }

    /**
     * The loop thread's CPU time and allocated bytes: so far if {@code before} is null, else since {@code before}. The
     * cost of the publishes the test applies between the pick and the apply is left out: it is no part of the purge.
     */
    private static long[] cost(com.sun.management.ThreadMXBean threads, long loop, long[] before) {
        long[] now = {threads.getThreadCpuTime(loop), threads.getThreadAllocatedBytes(loop)};
        return before == null ? now : new long[] {now[0] - before[0], now[1] - before[1]};
    }

    /** Applies a committed PUBLISH of {@link #STORED_AFTER} messages to {@code q}; returns their ids. */
    private static List<Long> publishApplied(BrokerQueue q) throws Exception {
        long before = QueueCore.onLoop(q, () -> q.store().writtenIndex());
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, q.name());
        for (int i = 0; i < STORED_AFTER; i++) {
            builder.add(42, i, List.of(), new byte[] {2});
        }
        q.applyReplicated(new FakeConnection("replica"), builder.build(), false, ProducerEpochs.NONE, 1L << 16);
        io.sluice.broker.TestAwait.until("the publish is stored", () -> q.store().writtenIndex() >= before + STORED_AFTER);
        List<Long> ids = new ArrayList<>();
        for (int i = 1; i <= STORED_AFTER; i++) {
            ids.add(before + i);
        }
        return ids;
    }

    /** The queue's unacknowledged ids, in order, read on its loop. */
    private static List<Long> unacked(BrokerQueue q) throws Exception {
        return QueueCore.onLoop(q, () -> {
            List<Long> ids = new ArrayList<>();
            q.store().forEachUnacked(ids::add);
            return ids;
        });
    }
}
