package io.sluice.broker;

import com.fasterxml.jackson.databind.JsonNode;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Network partitions of a three-node cluster ("What a confirm survives" in docs/replication.md): each broker is a
 * child JVM in a network namespace of its own, this JVM's clients reach all three over a bridge, and a partition is a
 * blackhole route inside a node's namespace ({@link NodeNetwork}), undone to heal it. A minority cut away cannot
 * commit, so it confirms nothing; a cut-off leader steps down and its clients move to the majority's leader and
 * resend, deduplicated; healed, the cut node catches up (by the log, or by the leader's snapshot when the leader
 * purged its log past it) and every node ends with the same digest (R6), exactly the confirmed messages.
 *
 * <p>Needs root and iproute2 (skipped, saying why, otherwise); the class takes minutes, so it is a
 * {@code cluster-loop} test, run by hand (docs/replication.md, "Tests").
 */
@Tag("cluster-loop")
class ClusterPartitionTest {
    private static final String QUEUE = "partition";

    @TempDir
    Path dir;
    private final Process[] nodes = new Process[3];
    private NodeNetwork network;

    @BeforeEach
    void network() throws Exception {
        String unavailable = NodeNetwork.unavailableReason();
        if (unavailable != null) {
            System.err.println("ClusterPartitionTest SKIPPED: " + unavailable);
        }
        Assumptions.assumeTrue(unavailable == null, "ClusterPartitionTest needs network namespaces: " + unavailable);
        network = NodeNetwork.create(3);
    }

    @AfterEach
    void cleanUp() throws Exception {
        try {
            ChildJvm.killAll(nodes);
        } finally {
            if (network != null) {
                network.close();
            }
        }
    }

    /**
     * Scenario A: the leader cut from both followers while its clients still reach it. It steps down having confirmed
     * nothing the majority does not hold; the producers end up on the majority's leader and their resends are
     * deduplicated; healed, the old leader follows, and every node holds exactly the confirmed messages.
     */
    @Test
    @Timeout(300)
    void shouldConfirmNothingOnALeaderCutFromTheMajorityAndMoveItsClientsThere() throws Exception {
        underTraffic((cluster, connection, leader, traffic) -> {
            int[] majority = {(leader + 1) % 3, (leader + 2) % 3};
            long termBefore = cluster.term(leader);
            network.cut(leader, majority);
            long cutAt = System.nanoTime();
            System.out.printf("ClusterPartitionTest: cut the leader, node %d, from nodes %d and %d with %d confirmed%n",
                    leader + 1, majority[0] + 1, majority[1] + 1, traffic.confirmed.size());
            // Ratis steps a leader down when a majority has not answered it for the maximum election timeout.
            JsonNode stepped = TestAwait.value("node " + (leader + 1) + " (cut off) no longer the leader", Duration.ofSeconds(20),
                    () -> cluster.get(leader, "/api/cluster"), s -> s != null && !"LEADER".equals(s.get("role").asText()));
            System.out.printf("ClusterPartitionTest: node %d stepped down after %d ms: %s%n", leader + 1,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cutAt), stepped);
            // Its admin API must not name it the leader any more (an operator reads it to find the leader).
            assertNotEquals(leader + 1, stepped.get("leaderNodeId").asInt(), "the leader node " + (leader + 1) + " names: " + stepped);
            int newLeader = cluster.awaitServing(majority);
            TestAwait.until("the producers' connection on the majority's leader, node " + (newLeader + 1), Duration.ofSeconds(60),
                    () -> nodeNamed(connection.brokerName()) == newLeader);
            traffic.awaitConfirmed(traffic.confirmed.size() + 1_000);
            long commitWhileCut = cluster.get(leader, "/api/cluster").get("commitIndex").asLong();
            traffic.stop();
            // Every confirm, the cut-off leader's after the cut included, is for a message the majority holds: before the
            // old leader is back, the majority holds exactly the confirmed messages, none twice (resends deduplicated).
            JsonNode majorityDigest = cluster.awaitSameDigest(QUEUE, Duration.ofSeconds(60), majority);
            assertEquals(traffic.confirmed.size(), majorityDigest.get("messages").asLong(),
                    "messages the majority holds, with the old leader still cut off: " + majorityDigest);
            assertEquals(commitWhileCut, cluster.get(leader, "/api/cluster").get("commitIndex").asLong(),
                    "the cut-off node's commit index stands still (it commits nothing without a majority)");

            network.heal(leader, majority);
            System.out.println("ClusterPartitionTest: healed");
            JsonNode rejoined = TestAwait.value("node " + (leader + 1) + " following node " + (newLeader + 1), Duration.ofSeconds(60),
                    () -> cluster.get(leader, "/api/cluster"), s -> s != null && "FOLLOWER".equals(s.get("role").asText())
                            && s.get("leaderNodeId").asInt() == newLeader + 1);
            assertTrue(rejoined.get("term").asLong() > termBefore, "a new term: " + rejoined);
            assertEquals(traffic.confirmed.size(), cluster.awaitDigest(QUEUE, traffic.confirmed.size(), Duration.ofSeconds(120)).get("messages").asLong(),
                    "messages every node holds after healing");
        });
    }

    /**
     * Scenario B: a follower cut from both other nodes while producers and a consumer go on, until the leader has
     * snapshotted and purged its log past the follower's last entry (a snapshot every 100 entries, 1 MiB log segments,
     * as {@link ClusterSnapshotTest}); healed, it catches up by the leader's snapshot plus the log after it (rule R4).
     * The cut follower cannot run an election anyone hears, and the leader keeps its majority: same leader, same term.
     */
    @Test
    @Timeout(420)
    void shouldCatchUpAFollowerCutOffWhileTheLeaderPurgedItsLogBySnapshot() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, network, 3, "  snapshot-every-entries: 100\n  log-segment-bytes: 1048576\n",
                "  max-frame-bytes: 1048576\n", "  max-message-bytes: 65536\n");
        cluster.startChildren(nodes);
        Set<Long> confirmed = ConcurrentHashMap.newKeySet();
        Set<Long> acked = ConcurrentHashMap.newKeySet();
        long[] next = {0};
        try (Connection connection = Connection.connect(options(cluster))) {
            connection.declareQueue(QUEUE, QueueSettings.EMPTY);
            int leader = nodeNamed(connection.brokerName());
            int behind = (leader + 1) % 3;
            int other = (leader + 2) % 3;
            Producer producer = connection.createProducer(QUEUE, ProducerOptions.DEFAULT);
            ClusterSnapshotTest.publish(producer, 500, next, confirmed);
            TestAwait.value("node " + (behind + 1) + " holding the 500 confirmed", Duration.ofSeconds(60),
                    () -> cluster.backlog(behind, QUEUE), held -> held == 500);
            long termBefore = cluster.term(leader);
            network.cut(behind, leader, other);
            System.out.printf("ClusterPartitionTest: cut follower node %d from nodes %d and %d at %s%n",
                    behind + 1, leader + 1, other + 1, cluster.get(behind, "/api/cluster"));
            // Publish 500 and ack 150 a round, until the leader's log no longer holds the entry after the follower's last
            // (bounded: at most 40 rounds of 500, 20 MB). The follower's applied index is read each round: an append on
            // its way at the cut may still have arrived.
            int round = 0;
            while (cluster.get(leader, "/api/cluster").get("logStartIndex").asLong()
                    <= cluster.get(behind, "/api/cluster").get("appliedIndex").asLong() + 1) {
                assertTrue(round++ < 40, "the leader has not purged its log past the cut follower's after " + confirmed.size()
                        + " messages: " + cluster.get(leader, "/api/cluster") + ", " + cluster.get(behind, "/api/cluster"));
                ClusterSnapshotTest.publish(producer, 500, next, confirmed);
                ClusterSnapshotTest.consumeSome(connection, QUEUE, 150, acked);
            }
            JsonNode cut = cluster.get(behind, "/api/cluster");
            System.out.printf("ClusterPartitionTest: leader's log starts at %s with %d confirmed, %d acked; the cut follower: %s%n",
                    cluster.get(leader, "/api/cluster").get("logStartIndex"), confirmed.size(), acked.size(), cut);
            assertEquals(false, cut.get("serving").asBoolean(), "the cut follower serves no client: " + cut);

            network.heal(behind, leader, other);
            System.out.println("ClusterPartitionTest: healed");
            JsonNode digest = cluster.awaitDigest(QUEUE, confirmed.size() - acked.size(), Duration.ofSeconds(120));
            assertEquals(confirmed.size() - acked.size(), digest.get("messages").asLong(), "every node's unacked messages: " + digest);
            // The install logs "in place" just after its queues are visible: the digest can agree a moment before.
            TestAwait.until("node " + (behind + 1) + " logging that it caught up by installing the leader's snapshot",
                    Duration.ofSeconds(10), () -> {
                        try {
                            String log = Files.readString(cluster.log(behind));
                            return log.contains("Snapshot install:") && log.contains("in place");
                        } catch (java.io.IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    });
            assertEquals(leader, nodeNamed(connection.brokerName()), "the producers stayed on the leader");
            for (int node = 0; node < 3; node++) {
                JsonNode status = cluster.get(node, "/api/cluster");
                assertEquals(termBefore, status.get("term").asLong(), "node " + (node + 1) + "'s term (no election): " + status);
                assertEquals(leader + 1, status.get("leaderNodeId").asInt(), "node " + (node + 1) + "'s leader: " + status);
            }
            producer.close();
        }
    }

    /**
     * Scenario C: with three nodes no side of a partition lacks a majority but the single node's, so the other split is
     * an asymmetric one: the leader cut from one follower only, the other follower reaching both. The leader commits
     * with the other follower, its clients stay; healed, the cut follower catches up from the log. What Ratis does with
     * the cut follower's elections is printed (term and leader of every node): its pre-votes reach only the other
     * follower, which refuses them while it hears the leader, so the term stays.
     */
    @Test
    @Timeout(300)
    void shouldLoseNothingWhenTheLeaderIsCutFromOneFollowerOnly() throws Exception {
        underTraffic((cluster, connection, leader, traffic) -> {
            int cutOff = (leader + 1) % 3;
            long termBefore = cluster.term(leader);
            network.cut(leader, cutOff);
            long cutAt = System.nanoTime();
            System.out.printf("ClusterPartitionTest: cut the leader, node %d, from node %d only, with %d confirmed%n",
                    leader + 1, cutOff + 1, traffic.confirmed.size());
            // Four maximum election timeouts (1.5 s by default): time for the cut follower to time out, try to be
            // elected and fail, more than once.
            int atCut = traffic.confirmed.size();
            TestAwait.until("6 s of partition and 1,000 more confirms", Duration.ofSeconds(90),
                    () -> System.nanoTime() - cutAt > TimeUnit.SECONDS.toNanos(6) && traffic.confirmed.size() >= atCut + 1_000);
            for (int node = 0; node < 3; node++) {
                System.out.printf("ClusterPartitionTest: during the cut, node %d: %s%n", node + 1, cluster.get(node, "/api/cluster"));
            }
            network.heal(leader, cutOff);
            System.out.println("ClusterPartitionTest: healed");
            traffic.awaitConfirmed(traffic.confirmed.size() + 500);
            traffic.stop();
            assertEquals(traffic.confirmed.size(), cluster.awaitDigest(QUEUE, traffic.confirmed.size(), Duration.ofSeconds(120)).get("messages").asLong(),
                    "messages every node holds after healing");
            // The cut follower's pre-votes reached only the other follower, which refused them while it heard the leader:
            // no term was raised, the leader never changed, and the producers stayed on it.
            for (int node = 0; node < 3; node++) {
                JsonNode status = cluster.get(node, "/api/cluster");
                System.out.printf("ClusterPartitionTest: after healing, node %d: %s (term before the cut %d)%n", node + 1, status, termBefore);
                assertEquals(termBefore, status.get("term").asLong(), "node " + (node + 1) + "'s term: " + status);
                assertEquals(leader + 1, status.get("leaderNodeId").asInt(), "node " + (node + 1) + "'s leader: " + status);
            }
            assertEquals(leader, nodeNamed(connection.brokerName()), "the producers stayed on the leader");
        });
    }

    /** What a scenario does while {@link Traffic} publishes: {@code leader} is the node the producers started on. */
    private interface DuringTraffic {
        void run(ClusterFixture cluster, Connection connection, int leader, Traffic traffic) throws Exception;
    }

    /**
     * Three nodes, two producers publishing with confirms through a client given all three; once 1,000 are confirmed
     * the scenario runs (and stops the traffic). Then every message sent must have been confirmed, and one consumer
     * must receive exactly the confirmed messages, each under one id, each producer's in order.
     */
    private void underTraffic(DuringTraffic scenario) throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, network, 3, "", "", "");
        cluster.startChildren(nodes);
        ConnectionOptions options = options(cluster);
        Set<Long> confirmed;
        try (Connection connection = Connection.connect(options)) {
            connection.declareQueue(QUEUE, QueueSettings.EMPTY);
            int leader = nodeNamed(connection.brokerName());
            try (Traffic traffic = new Traffic(connection)) {
                confirmed = traffic.confirmed;
                traffic.awaitConfirmed(1_000);
                scenario.run(cluster, connection, leader, traffic);
                traffic.assertEveryMessageConfirmed();
            }
        }
        assertConsumedExactly(options, confirmed);
    }

    private void assertConsumedExactly(ConnectionOptions options, Set<Long> expected) throws Exception {
        ConsumedHistory history = ConsumedHistory.consumeEverything(options, QUEUE);
        Set<Long> missing = new HashSet<>(expected);
        missing.removeAll(history.idsByPayload().keySet());
        System.out.printf("ClusterPartitionTest: confirmed %d, consumed %d payloads, stored twice %d, lost %d%n", expected.size(),
                history.idsByPayload().size(), history.storedTwice(), missing.size());
        assertEquals(Set.of(), missing, "confirmed messages lost");
        assertEquals(0, history.storedTwice(), "messages stored more than once (consumed under two ids)");
        assertEquals(expected, history.idsByPayload().keySet(), "the queue holds exactly the confirmed messages");
        assertEquals(List.of(), history.faults(), "each message consumed once, each producer's in the order it sent them");
    }

    private ConnectionOptions options(ClusterFixture cluster) {
        return ConnectionOptions.builder().bootstrap(cluster.bootstrap())
                .reconnectPolicy(new ReconnectPolicy(true, Duration.ofMillis(50), Duration.ofMillis(500), 2.0, 0.2))
                .connectTimeout(Duration.ofSeconds(30)).requestTimeout(Duration.ofSeconds(60)).build();
    }

    private static int nodeNamed(String brokerName) {
        return Integer.parseInt(brokerName.substring("node-".length())) - 1;
    }

    /**
     * Two producers of one connection publishing in turn from a thread of their own until stopped, each message with a
     * confirm; what was confirmed is recorded. Closing it stops the sending and closes the producers.
     */
    private static final class Traffic implements AutoCloseable {
        final Set<Long> confirmed = ConcurrentHashMap.newKeySet();
        private final Map<Long, CompletableFuture<Void>> sent = new ConcurrentHashMap<>();
        private final List<Throwable> failures = new CopyOnWriteArrayList<>();
        private final AtomicBoolean stopping = new AtomicBoolean();
        private final Producer[] producers;
        private final Thread thread;

        Traffic(Connection connection) throws Exception {
            producers = new Producer[]{connection.createProducer(QUEUE, ProducerOptions.DEFAULT),
                    connection.createProducer(QUEUE, ProducerOptions.DEFAULT)};
            thread = new Thread(this::send, "partition-traffic");
            thread.start();
        }

        private void send() {
            long[] sentBy = new long[producers.length];
            for (long n = 0; !stopping.get(); n++) {
                int by = (int) (n % producers.length);
                long payload = ConsumedHistory.payload(by, sentBy[by]++);
                CompletableFuture<Void> f = producers[by].sendAsync(Payloads.of(payload));
                sent.put(payload, f);
                // At most about 4,000 a second: enough to keep publishes in flight through a partition, few enough to consume.
                java.util.concurrent.locks.LockSupport.parkNanos(250_000);
                f.whenComplete((ok, failure) -> {
                    if (failure == null) {
                        confirmed.add(payload);
                    } else {
                        failures.add(failure);
                    }
                });
            }
        }

        void awaitConfirmed(long count) throws InterruptedException {
            TestAwait.until(count + " messages confirmed (" + confirmed.size() + " so far; failures " + failures + ")",
                    Duration.ofSeconds(90), () -> confirmed.size() >= count);
        }

        /** Stops sending and waits for the confirm of everything sent (up to 120 s). */
        void stop() throws Exception {
            stopping.set(true);
            thread.join(60_000);
            assertTrue(!thread.isAlive(), "the sending thread stopped");
            CompletableFuture.allOf(sent.values().toArray(CompletableFuture[]::new)).get(120, TimeUnit.SECONDS);
        }

        void assertEveryMessageConfirmed() {
            assertEquals(List.of(), failures, "every message is confirmed in the end");
            assertEquals(sent.keySet(), confirmed, "every message sent is confirmed");
        }

        @Override
        public void close() throws Exception {
            stopping.set(true);
            thread.join(60_000);
            for (Producer producer : producers) {
                producer.close();
            }
        }
    }
}
