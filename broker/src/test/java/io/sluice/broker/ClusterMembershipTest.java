package io.sluice.broker;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.broker.admin.AdminCli;
import io.sluice.client.Connection;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Adding and removing a node (docs/replication.md, "Adding and removing a node"), four broker JVMs on 127.0.0.1: three
 * founders and a fourth started with {@code cluster.join: true}. While a producer publishes numbered messages, node 4
 * is added ({@code POST /api/cluster/nodes}, after the refusals) once the leader has purged its log after a snapshot,
 * so that node 4 catches up through a snapshot fetch (rule R4), then to the others' digest; then a follower
 * among the founders is removed ({@code sluice admin remove-node}) and the rest keep confirming; node 4 and the other
 * following founder, restarted, know the membership from the Raft log, not from their configurations (which list the
 * removed node; the founder's lacks node 4). At the end every
 * confirmed number is delivered once and the remaining members' digests agree.
 */
@Tag("cluster-loop")
@Timeout(300)
class ClusterMembershipTest {
    private static final String QUEUE = "members";
    private static final ObjectMapper JSON = new ObjectMapper();
    /** 100 messages a batch make about 100 KiB of log: the 1 MiB segments close, and are purged after snapshots, soon. */
    private static final int PAYLOAD_BYTES = 1024;

    @TempDir
    Path dir;
    private final Process[] nodes = new Process[4];
    private final HttpClient http = HttpClient.newHttpClient();

    @AfterEach
    void killAll() throws InterruptedException {
        ChildJvm.killAll(nodes);
    }

    @Test
    void aNodeIsAddedAndCatchesUpThenAFollowerIsRemovedAndNothingConfirmedIsLostOrDoubled() throws Exception {
        ClusterFixture cluster = ClusterFixture.snapshottingWithJoining(dir, 3, 1);
        for (int i = 0; i < 4; i++) {
            nodes[i] = null;
        }
        for (int i = 0; i < 4; i++) {
            cluster.startChild(i, nodes);
        }
        int leader = cluster.awaitServing(0, 1, 2);
        assertEquals(List.of(1, 2, 3), memberIds(cluster.get(leader, "/api/cluster")));
        assertEquals(List.of(), memberIds(cluster.get(3, "/api/cluster")), "node 4 waits to be added");

        Set<Long> confirmed = ConcurrentHashMap.newKeySet();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        AtomicBoolean stop = new AtomicBoolean();
        ReentrantLock publishing = new ReentrantLock(); // held by the test: the producer is between batches, all confirmed
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            c.declareQueue(QUEUE, QueueSettings.EMPTY);
            Producer producer = c.createProducer(QUEUE, ProducerOptions.DEFAULT);
            long[] next = {0};
            Thread publisher = new Thread(() -> {
                try {
                    while (!stop.get()) {
                        publishing.lock();
                        try {
                            ClusterFixture.publishNumbered(producer, 100, PAYLOAD_BYTES, next, confirmed);
                        } finally {
                            publishing.unlock();
                        }
                    }
                } catch (Throwable t) {
                    failed.set(t);
                }
            }, "members-publisher");
            publisher.start();
            awaitConfirmed(confirmed, failed, 500);

            // Refusals, each with its code and a sentence; nothing changes.
            int follower = leader == 0 ? 1 : 0;
            String node4 = addBody(cluster, 3, 4);
            assertRefused(send(cluster, follower, "POST", "/api/cluster/nodes", node4), 409, "not_leader");
            assertRefused(send(cluster, leader, "POST", "/api/cluster/nodes", addBody(cluster, 3, 2)), 409, "duplicate_node");
            assertRefused(send(cluster, leader, "POST", "/api/cluster/nodes", "{\"id\":4,\"host\":\"127.0.0.1\",\"raftPort\":"
                    + cluster.raftPorts[0] + ",\"clientPort\":" + cluster.clientPorts[3] + ",\"snapshotPort\":"
                    + cluster.snapshotPorts[3] + "}"), 409, "duplicate_address");
            assertRefused(send(cluster, leader, "POST", "/api/cluster/nodes", "{\"id\":4}"), 400, "bad_request");
            assertRefused(send(cluster, leader, "POST", "/api/cluster/nodes", "not json"), 400, "bad_json");
            assertRefused(send(cluster, leader, "DELETE", "/api/cluster/nodes/9", ""), 404, "unknown_node");
            assertRefused(send(cluster, leader, "DELETE", "/api/cluster/nodes/" + (leader + 1), ""), 409, "is_leader");
            assertEquals(List.of(1, 2, 3), memberIds(cluster.get(leader, "/api/cluster")));

            // The leader's log no longer starts at its beginning: node 4, which holds nothing, must fetch a snapshot (R4).
            TestAwait.until("the leader purging its log after a snapshot", Duration.ofSeconds(90), () -> {
                JsonNode status = cluster.get(leader, "/api/cluster");
                return status != null && status.path("logStartIndex").asLong() > 0;
            });

            // Add node 4 while the producer publishes: the answer comes once the new configuration is committed.
            HttpResponse<String> added = send(cluster, leader, "POST", "/api/cluster/nodes", node4);
            assertEquals(200, added.statusCode(), added.body());
            assertEquals(List.of(1, 2, 3, 4), memberIds(JSON.readTree(added.body())));
            assertFalse(cluster.get(leader, "/api/cluster").path("membershipChanging").asBoolean(true), "the change is over");
            int before = confirmed.size();
            awaitConfirmed(confirmed, failed, before + 300);
            publishing.lock();
            try {
                cluster.awaitSameDigest(QUEUE, Duration.ofSeconds(60), (long) confirmed.size(), 0, 1, 2, 3);
            } finally {
                publishing.unlock();
            }
            for (int i = 0; i < 4; i++) {
                int node = i;
                TestAwait.until("node " + (i + 1) + " listing node 4 as a member", Duration.ofSeconds(30),
                        () -> memberIds(cluster.get(node, "/api/cluster")).equals(List.of(1, 2, 3, 4)));
            }
            TestAwait.until("the leader following node 4", Duration.ofSeconds(30), () -> followerIds(cluster.get(leader, "/api/cluster"))
                    .contains(4));
            TestAwait.until("the leader's metrics having node 4's follower series", Duration.ofSeconds(30),
                    () -> followerSeries(cluster, leader, 4));
            assertTrue(ChildJvm.lines(cluster.log(3)).stream().anyMatch(l -> l.contains("fetching the leader's snapshot")),
                    "node 4 caught up through the leader's snapshot: " + ChildJvm.tail(cluster.log(3)));

            // Remove a founder that follows, with the CLI, while the producer publishes; the rest keep confirming.
            int removed = leader == 0 ? 1 : 0;
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int exit = AdminCli.run(new String[]{"--url", "http://127.0.0.1:" + cluster.metricsPorts[leader], "remove-node",
                    Integer.toString(removed + 1)}, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
            assertEquals(0, exit, err.toString(StandardCharsets.UTF_8));
            assertTrue(out.toString(StandardCharsets.UTF_8).contains("removed node " + (removed + 1)), out.toString(StandardCharsets.UTF_8));
            List<Integer> remaining = new ArrayList<>(List.of(1, 2, 3, 4));
            remaining.remove(Integer.valueOf(removed + 1));
            assertEquals(remaining, memberIds(cluster.get(leader, "/api/cluster")));
            before = confirmed.size();
            awaitConfirmed(confirmed, failed, before + 300);
            TestAwait.until("the leader no longer following node " + (removed + 1), Duration.ofSeconds(30),
                    () -> !followerIds(cluster.get(leader, "/api/cluster")).contains(removed + 1));
            assertFalse(followerSeries(cluster, leader, removed + 1), "the removed node's follower series are gone");
            TestAwait.until("the removed node not serving", Duration.ofSeconds(30), () -> {
                JsonNode status = cluster.get(removed, "/api/cluster");
                return status != null && !status.path("serving").asBoolean(true) && !status.path("member").asBoolean(true);
            });

            // Restarted (SIGTERM), node 4 (whose configuration lists all four) and the founder still following (whose
            // configuration lists nodes 1-3) know the members from their logs, and send clients to the leader.
            restartKnowingTheMembers(cluster, 3, remaining, leader);
            restartKnowingTheMembers(cluster, 3 - leader - removed, remaining, leader);
            before = confirmed.size();
            awaitConfirmed(confirmed, failed, before + 300);

            stop.set(true);
            publisher.join(120_000);
            if (failed.get() != null) {
                throw new AssertionError("the producer failed", failed.get());
            }
            int[] rest = remaining.stream().mapToInt(id -> id - 1).toArray();
            assertEquals(confirmed.size(), cluster.awaitSameDigest(QUEUE, Duration.ofSeconds(60), (long) confirmed.size(), rest)
                    .get("messages").asLong());
            Map<Long, Integer> received = new TreeMap<>();
            var consumer = c.subscribe(QUEUE, ConsumerOptions.DEFAULT);
            while (received.values().stream().mapToInt(Integer::intValue).sum() < confirmed.size()) {
                var m = consumer.receive(Duration.ofSeconds(30));
                assertTrue(m != null, "only " + received.size() + " of " + confirmed.size() + " delivered");
                received.merge(ByteBuffer.wrap(m.payload()).getLong(), 1, Integer::sum);
                m.ack();
            }
            assertEquals(new TreeSet<>(confirmed), received.keySet());
            assertTrue(received.values().stream().allMatch(n -> n == 1), "each once");
            assertFalse(confirmed.isEmpty());
        }
    }

    /**
     * Stops node {@code node} with SIGTERM and starts it again with its configuration; then it must list {@code members}
     * (from its log), name the leader, and send a client given its address alone to the leader (NOT_LEADER naming the
     * leader's client address, from the members in its log).
     */
    private void restartKnowingTheMembers(ClusterFixture cluster, int node, List<Integer> members, int leader) throws Exception {
        String name = "node " + (node + 1);
        nodes[node].destroy();
        assertTrue(nodes[node].waitFor(60, TimeUnit.SECONDS), name + " stopped");
        cluster.startChild(node, nodes);
        TestAwait.until(name + " restarted listing the members " + members, Duration.ofSeconds(60),
                () -> memberIds(cluster.get(node, "/api/cluster")).equals(members));
        TestAwait.until(name + " naming the leader", Duration.ofSeconds(60),
                () -> cluster.get(node, "/api/cluster").path("leaderNodeId").asInt() == leader + 1);
        String[] reached = {null};
        TestAwait.until("a client given " + name + "'s address alone connecting", Duration.ofSeconds(60), () -> {
            try (Connection viaNode = Connection.connect(io.sluice.client.ConnectionOptions.builder()
                    .bootstrap(List.of("127.0.0.1:" + cluster.clientPorts[node]))
                    .reconnectPolicy(new io.sluice.client.ReconnectPolicy(true, Duration.ofMillis(50), Duration.ofMillis(500), 2.0, 0.2))
                    .connectTimeout(Duration.ofSeconds(30)).build())) {
                reached[0] = viaNode.brokerName();
                return true;
            } catch (io.sluice.client.ConnectionLostException e) {
                // A follower that just restarted closes every client connection when Ratis tells it of its leader, which
                // may come just after its status names the leader: a connection in its handshake then is lost. Not a hint.
                return false;
            } catch (Exception e) {
                throw new AssertionError("a client given " + name + "'s address alone did not connect", e);
            }
        });
        assertEquals("node-" + (leader + 1), reached[0], "where " + name + " sent the client");
    }

    private static void awaitConfirmed(Set<Long> confirmed, AtomicReference<Throwable> failed, int count) throws InterruptedException {
        TestAwait.until(count + " confirmed", Duration.ofSeconds(90), () -> {
            if (failed.get() != null) {
                throw new AssertionError("the producer failed", failed.get());
            }
            return confirmed.size() >= count;
        });
    }

    private static String addBody(ClusterFixture cluster, int node, int id) {
        return "{\"id\":" + id + ",\"host\":\"127.0.0.1\",\"raftPort\":" + cluster.raftPorts[node] + ",\"clientPort\":"
                + cluster.clientPorts[node] + ",\"snapshotPort\":" + cluster.snapshotPorts[node] + "}";
    }

    private static List<Integer> memberIds(JsonNode status) {
        return nodeIds(status, "members");
    }

    private static List<Integer> followerIds(JsonNode status) {
        return nodeIds(status, "followers");
    }

    /** The node ids of the rows of {@code status}'s list {@code field}; none if the node did not answer. */
    private static List<Integer> nodeIds(JsonNode status, String field) {
        List<Integer> ids = new ArrayList<>();
        if (status != null) {
            for (JsonNode row : status.path(field)) {
                ids.add(row.get("nodeId").asInt());
            }
        }
        return ids;
    }

    /** Whether node {@code node}'s metrics have a {@code sluice_cluster_follower_lag_entries} series of member {@code id}. */
    private boolean followerSeries(ClusterFixture cluster, int node, int id) {
        String scrape;
        try {
            scrape = send(cluster, node, "GET", "/metrics", "").body();
        } catch (Exception e) {
            throw new AssertionError("node " + (node + 1) + "'s metrics did not answer", e);
        }
        return scrape.lines().anyMatch(l -> l.startsWith("sluice_cluster_follower_lag_entries{") && l.contains("node=\"" + id + "\""));
    }

    private HttpResponse<String> send(ClusterFixture cluster, int node, String method, String path, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + cluster.metricsPorts[node] + path))
                .method(method, HttpRequest.BodyPublishers.ofString(body)).timeout(Duration.ofSeconds(120)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static void assertRefused(HttpResponse<String> response, int status, String code) throws Exception {
        assertEquals(status, response.statusCode(), response.body());
        JsonNode body = JSON.readTree(response.body());
        assertEquals(code, body.get("error").asText(), response.body());
        assertNotEquals("", body.get("message").asText(""), response.body());
    }
}
