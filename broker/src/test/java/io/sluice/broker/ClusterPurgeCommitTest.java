package io.sluice.broker;

import com.fasterxml.jackson.databind.JsonNode;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.PurgeQueueFrame;
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

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * Rule R7 of docs/replication.md: a cluster leader's purge changes no store before its entries are applied, as R5 does
 * for acks. A purge on a leader cut off from both followers never commits: the client gets NOT_LEADER and the old
 * leader's store keeps every message (its digest is the followers'), and so does every node once it is back; every
 * message is then delivered. If that leader's entries commit after all, every node removes the same ids. (A purge that
 * commits at once: {@code ClusterReplicationTest}; the hold itself, what is delivered while it lasts and after it is
 * given back: {@code queue.ClusterPurgeHoldTest}.)
 */
@Tag("cluster")
@Timeout(180)
class ClusterPurgeCommitTest {
    private static final int TOTAL = 100;
    /** Messages a consumer holds (delivered, not acknowledged) while the queue is purged: a purge leaves them. */
    private static final int HELD = 10;

    @TempDir
    Path dir;
    private final List<Broker> running = new ArrayList<>();

    @AfterEach
    void stop() {
        for (Broker broker : running) {
            broker.close();
        }
    }

    @Test
    void aPurgeTheLeaderCouldNotCommitLeavesEveryStoreWhole() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        List<Broker> brokers = cluster.startInProcess();
        running.addAll(brokers);
        Broker leader = ClusterFixture.awaitLeader(brokers);
        int leaderIndex = brokers.indexOf(leader);
        JsonNode before = purgeOnCutOffLeader(cluster, brokers, leaderIndex);
        leader.close();
        running.remove(leader);

        // The followers elect a leader of their own; the old leader comes back as a follower.
        cluster.restartFollowersThenOldLeader(leaderIndex, running);
        assertEquals(before, cluster.awaitDigest("q", TOTAL, Duration.ofSeconds(30)), "every node keeps every message");
        assertEquals(ClusterFixture.sequences(0, TOTAL), cluster.consumeAll("q", TOTAL),
                "every message is delivered after the failed purge");
        cluster.awaitDigest("q", 0, Duration.ofSeconds(30));
    }

    /**
     * The purge's entries are in the cut-off leader's log, uncommitted, and it gave the held messages back. It stays up
     * and one follower comes back, whose log ends before those entries: only the old leader can win the election, and it
     * commits them. Applying them removes the given-back messages on every node, the old leader included (a given-back
     * message is untracked for this: one tracked again would be skipped there, and its store would keep the 90).
     */
    @Test
    void aPurgeCommittedAfterItsLeaderGaveItBackRemovesTheSameIdsOnEveryNode() throws Exception {
        ClusterFixture cluster = ClusterFixture.slowToStepDown(dir);
        List<Broker> brokers = cluster.startInProcess();
        running.addAll(brokers);
        Broker leader = ClusterFixture.awaitLeader(brokers);
        int leaderIndex = brokers.indexOf(leader);
        purgeOnCutOffLeader(cluster, brokers, leaderIndex);

        cluster.rejoinBehindOldLeader(leader, leaderIndex, running);
        cluster.awaitDigest("q", HELD, Duration.ofSeconds(30));
        assertEquals(ClusterFixture.sequences(0, HELD), cluster.consumeAll("q", HELD), "what the consumer held, and nothing purged");
        cluster.awaitDigest("q", 0, Duration.ofSeconds(30));
    }

    /**
     * Publishes {@link #TOTAL} messages, has a consumer on the leader hold the first {@link #HELD}, closes both followers
     * and purges the queue on the leader over the wire, which must answer NOT_LEADER and leave the leader's store as it
     * was (on main it had removed the 90). Returns the digest every node had before.
     */
    private JsonNode purgeOnCutOffLeader(ClusterFixture cluster, List<Broker> brokers, int leaderIndex) throws Exception {
        publishTotal(cluster);
        ClusterFixture.awaitApplied(brokers, brokers.get(leaderIndex));
        JsonNode before = cluster.awaitDigest("q", TOTAL, Duration.ofSeconds(30));
        List<String> leaderOnly = List.of("127.0.0.1:" + cluster.clientPorts[leaderIndex]);
        try (Connection c = Connection.connect(ConnectionOptions.builder().bootstrap(leaderOnly).build())) {
            Consumer consumer = c.subscribe("q", new ConsumerOptions(HELD, 128, Duration.ofMillis(1)));
            List<Long> delivered = new ArrayList<>();
            for (int i = 0; i < HELD; i++) {
                Message m = consumer.receive(Duration.ofSeconds(30));
                assertNotNull(m, "only " + i + " delivered");
                delivered.add(m.id());
            }
            ClusterFixture.awaitDeliveriesReplicated(brokers, brokers.get(leaderIndex), "q", delivered); // R10's entries on every node
            try (RawClient raw = RawClient.connected(cluster.clientPorts[leaderIndex])) {
                cluster.closeAllBut(brokers, leaderIndex, running);
                raw.send(new PurgeQueueFrame(2, "q"));
                assertEquals(List.of(ErrorCode.NOT_LEADER), refusals(raw), "what the purge's client is told");
            }
        }
        assertEquals(before, cluster.get(leaderIndex, "/api/queues/q/digest"), "the cut-off leader's store after its purge failed");
        return before;
    }

    /**
     * The codes of the ERROR and CLOSE frames {@code raw} gets until its connection closes, each once: a purge the
     * leader could not commit is answered NOT_LEADER, and its connection closed with NOT_LEADER (rule S1).
     */
    private static List<ErrorCode> refusals(RawClient raw) throws InterruptedException {
        Set<ErrorCode> codes = new java.util.LinkedHashSet<>();
        while (true) {
            Object frame = raw.received.poll(60, java.util.concurrent.TimeUnit.SECONDS);
            assertNotNull(frame, "no answer and no close within 60 s; so far " + codes);
            if (frame instanceof ErrorFrame error) {
                codes.add(error.errorCode());
            } else if (frame instanceof CloseFrame close) {
                codes.add(close.errorCode());
            } else if ("closed".equals(frame)) {
                return List.copyOf(codes);
            }
        }
    }

    private static void publishTotal(ClusterFixture cluster) throws Exception {
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            c.declareQueue("q", QueueSettings.EMPTY);
            Producer producer = c.createProducer("q", ProducerOptions.DEFAULT);
            ClusterFixture.publish(producer, 0, TOTAL);
        }
    }
}
