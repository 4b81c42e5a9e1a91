package io.sluice.broker;

import com.fasterxml.jackson.databind.JsonNode;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * Rule R9 of docs/replication.md: a cluster leader's {@code drop-oldest} drop changes no store before its ACK entry is
 * applied, as R5 and R7 do for acks and purges. A publish on a full queue of a leader cut off from both followers makes
 * the leader drop the oldest message not out with a consumer, and neither the drop's entry nor the publish's ever
 * commits: the old leader's store keeps every message, under the same ids (its digest is the followers'), and so does
 * every node once it is back; every message is then delivered. If that leader's entries commit after all, every node
 * drops the same message. (Drops that commit at once: {@code ClusterFlowControlTest}; the hold itself, what is delivered
 * and dropped while it lasts: {@code queue.ClusterDropOldestHoldTest}.)
 */
@Tag("cluster")
@Timeout(180)
class ClusterDropOldestCommitTest {
    /** The queue's hard quota, and what is published before the leader is cut off: the queue is full. */
    private static final int TOTAL = 10;
    /** Messages a consumer on the leader holds (delivered, not acknowledged): a drop passes them. */
    private static final int HELD = 2;
    private static final long PRODUCER = 0x5EED_0009L;
    private static final String DLQ = "d-dlq";

    @TempDir
    Path dir;
    private final List<Broker> running = new ArrayList<>();
    private ClusterFixture cluster;
    private List<Broker> brokers;
    private int leaderIndex;

    @AfterEach
    void stop() {
        for (Broker broker : running) {
            broker.close();
        }
    }

    @Test
    void aDropTheLeaderCouldNotCommitLeavesEveryStoreWhole() throws Exception {
        aDropTheLeaderCouldNotCommitLeavesEveryStoreWhole(false);
    }

    /**
     * The same with the queue dead-lettering what it drops (R8): the move's entry never commits either, and the old
     * leader's source keeps the message (the original leaves its source only when that entry is applied, so this held
     * on main already) and its dead-letter queue stays empty, as on every node.
     */
    @Test
    void aDeadLetteredDropTheLeaderCouldNotCommitLeavesEveryStoreWhole() throws Exception {
        aDropTheLeaderCouldNotCommitLeavesEveryStoreWhole(true);
        assertEquals(0, cluster.awaitDigest(DLQ, 0, Duration.ofSeconds(30)).get("messages").asLong());
    }

    private void aDropTheLeaderCouldNotCommitLeavesEveryStoreWhole(boolean deadLetter) throws Exception {
        JsonNode before = dropOnCutOffLeader(new ClusterFixture(dir, 3), deadLetter);
        Broker leader = brokers.get(leaderIndex);
        leader.close();
        running.remove(leader);

        // The followers elect a leader of their own; the old leader comes back as a follower.
        cluster.restartFollowersThenOldLeader(leaderIndex, running);
        assertEquals(before, cluster.awaitDigest("d", TOTAL, Duration.ofSeconds(30)), "every node keeps every message");
        assertEquals(ClusterFixture.sequences(0, TOTAL), cluster.consumeAll("d", TOTAL),
                "every message is delivered after the failed drop");
        cluster.awaitDigest("d", 0, Duration.ofSeconds(30));
    }

    /**
     * The drop's entry is in the cut-off leader's log, uncommitted, and it gave the held message back (the publish's
     * entry waited behind it and was refused with it, so it is not in the log). The old leader stays up and one follower
     * comes back, whose log ends before that entry: only the old leader can win the election, and it commits it. Every
     * node then drops the same message (the third published, the oldest not out with the consumer when the leader
     * chose), the old leader included (a given-back message is untracked for this, as a purge's is). The producer, told
     * nothing but a closed connection, resends its message, which is stored once.
     */
    @Test
    void aDropCommittedAfterItsLeaderGaveItBackDropsTheSameMessageOnEveryNode() throws Exception {
        dropOnCutOffLeader(ClusterFixture.slowToStepDown(dir), false);
        cluster.rejoinBehindOldLeader(brokers.get(leaderIndex), leaderIndex, running);
        cluster.awaitServing(leaderIndex);
        try (RawClient raw = RawClient.connected(cluster.clientPorts[leaderIndex])) {
            publishOneMore(raw);
            awaitConfirm(raw);
        }
        cluster.awaitDigest("d", TOTAL, Duration.ofSeconds(30));
        Set<Long> expected = ClusterFixture.sequences(0, TOTAL + 1);
        expected.remove((long) HELD);
        assertEquals(expected, cluster.consumeAll("d", TOTAL), "the same message dropped everywhere, the new one stored");
        cluster.awaitDigest("d", 0, Duration.ofSeconds(30));
    }

    /**
     * Starts {@code fixture}'s three nodes, publishes {@link #TOTAL} messages to a queue of that hard quota with the policy drop-oldest
     * (dead-lettering what it drops to {@link #DLQ} if {@code deadLetter}), has a consumer on the leader hold the first {@link #HELD}, closes both followers and publishes one more message on
     * the leader over the wire: the leader drops the oldest message not out with the consumer, and neither entry commits
     * (the connection is closed, rule S1). The leader's store must still hold every id it held (on main it had
     * acknowledged the dropped one). Returns the digest every node had before.
     */
    private JsonNode dropOnCutOffLeader(ClusterFixture fixture, boolean deadLetter) throws Exception {
        cluster = fixture;
        brokers = cluster.startInProcess();
        running.addAll(brokers);
        leaderIndex = brokers.indexOf(ClusterFixture.awaitLeader(brokers));
        publishTotal(cluster, deadLetter);
        Broker leader = brokers.get(leaderIndex);
        ClusterFixture.awaitApplied(brokers, leader);
        JsonNode before = cluster.awaitDigest("d", TOTAL, Duration.ofSeconds(30));
        List<Long> ids = storedIds(leader);
        assertEquals(TOTAL, ids.size());
        List<String> leaderOnly = List.of("127.0.0.1:" + cluster.clientPorts[leaderIndex]);
        try (Connection c = Connection.connect(ConnectionOptions.builder().bootstrap(leaderOnly).build())) {
            Consumer consumer = c.subscribe("d", new ConsumerOptions(HELD, 128, Duration.ofMillis(1)));
            List<Long> delivered = new ArrayList<>();
            for (int i = 0; i < HELD; i++) {
                Message m = consumer.receive(Duration.ofSeconds(30));
                assertNotNull(m, "only " + i + " delivered");
                delivered.add(m.id());
            }
            ClusterFixture.awaitDeliveriesReplicated(brokers, leader, "d", delivered); // R10's entries on every node
            try (RawClient raw = RawClient.connected(cluster.clientPorts[leaderIndex])) {
                cluster.closeAllBut(brokers, leaderIndex, running);
                publishOneMore(raw);
                awaitClosed(raw);
            }
        }
        assertEquals(ids, storedIds(leader), "the cut-off leader's stored ids after its drop was not committed");
        assertEquals(before, cluster.get(leaderIndex, "/api/queues/d/digest"), "the cut-off leader's digest");
        return before;
    }

    /** Publishes message {@link #TOTAL} (the eleventh) of {@link #PRODUCER}, a resend when sent again. */
    private static void publishOneMore(RawClient raw) {
        PublishFrameBuilder frame = new PublishFrameBuilder(raw.alloc(), "d");
        frame.add(PRODUCER, 1, List.of(), Payloads.of(TOTAL));
        raw.send(frame.build());
    }

    private static void awaitConfirm(RawClient raw) throws InterruptedException {
        List<Object> frames = new ArrayList<>();
        while (true) {
            Object frame = raw.received.poll(30, TimeUnit.SECONDS);
            assertNotNull(frame, "no confirm within 30 s; received " + frames);
            if (frame instanceof ConfirmFrame) {
                return;
            }
            frames.add(frame);
            assertNotEquals("closed", frame, "closed before a confirm; received " + frames);
            assertFalse(frame instanceof PublishErrorFrame, "refused: " + frame);
        }
    }

    /** Waits until {@code raw}'s connection is closed: the leader could not commit its publish (rule S1). */
    private static void awaitClosed(RawClient raw) throws InterruptedException {
        List<Object> frames = new ArrayList<>();
        while (true) {
            Object frame = raw.received.poll(60, TimeUnit.SECONDS);
            assertNotNull(frame, "the connection was not closed within 60 s; received " + frames);
            if ("closed".equals(frame)) {
                return;
            }
            frames.add(frame);
        }
    }

    /** The ids {@code broker}'s store holds unacknowledged in queue d, read on the queue's executor. */
    private static List<Long> storedIds(Broker broker) throws Exception {
        io.sluice.broker.queue.BrokerQueue q = broker.queues().get("d");
        return q.executor().submit(() -> {
            List<Long> ids = new ArrayList<>();
            q.store().forEachUnacked(ids::add);
            return ids;
        }).get(30, TimeUnit.SECONDS);
    }

    private static void publishTotal(ClusterFixture cluster, boolean deadLetter) throws Exception {
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            QueueSettings.Builder settings = QueueSettings.builder()
                    .set(QueueSettings.QUOTA_HARD_MESSAGES, TOTAL)
                    .set(QueueSettings.OVERFLOW_POLICY, "drop-oldest");
            if (deadLetter) {
                c.declareQueue(DLQ, QueueSettings.EMPTY); // declared before: the move's own entry is what cannot commit
                settings.deadLetterQueue(DLQ).set("deadLetterDropped", true);
            }
            c.declareQueue("d", settings.build());
            Producer producer = c.createProducer("d", ProducerOptions.DEFAULT);
            ClusterFixture.publish(producer, 0, TOTAL);
        }
    }
}
