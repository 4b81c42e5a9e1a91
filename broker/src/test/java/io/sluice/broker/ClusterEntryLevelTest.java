package io.sluice.broker;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.client.Connection;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A rolling upgrade (rule R12 of docs/replication.md, "Rolling upgrade"): three broker JVMs that start as brokers of
 * entry level 4 (the test knob {@code -Dsluice.cluster.max-entry-level=4}: no batches), so the new cluster is finalized
 * at 4. Two are upgraded (restarted without the knob): the leader still writes level-4 formats, so the old node applies
 * everything and every digest agrees; raising the level to 5 is refused naming the old node (and above 5, below 4 and a
 * bad body are refused too). Once it is upgraded the raise succeeds and the digests agree again. Last, a follower
 * restored from before the level entry with an old broker meets the level entry it cannot apply and stops applying the
 * log, HALTED, holding what it held (not skipping ahead), while the others go on; upgraded once more it catches up and
 * every digest agrees.
 */
@Tag("cluster-loop")
@Timeout(420)
class ClusterEntryLevelTest {
    private static final String QUEUE = "levels";
    private static final List<String> OLD_BROKER = List.of("-Dsluice.cluster.max-entry-level=4");
    /** The newest entry level, which a broker of this build supports. */
    private static final int NEWEST = 8;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration PATIENCE = Duration.ofSeconds(90);

    @TempDir
    Path dir;
    private final Process[] nodes = new Process[3];
    private final HttpClient http = HttpClient.newHttpClient();

    @AfterEach
    void killAll() throws InterruptedException {
        ChildJvm.killAll(nodes);
    }

    @Test
    void aNodeBehindIsNeverWrittenAFormatItCannotReadAndStopsRatherThanSkipOne() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        for (int i = 0; i < 3; i++) {
            nodes[i] = null;
        }
        startAll(cluster, OLD_BROKER);
        awaitEntryLevel(cluster, 4, 0, 1, 2); // a new cluster: its first leader's newest level

        upgrade(cluster, 0);
        upgrade(cluster, 1);
        try (Connection connection = Connection.connect(cluster.reconnectingOptions())) {
            connection.declareQueue(QUEUE, QueueSettings.EMPTY);
            Producer producer = connection.createProducer(QUEUE, ProducerOptions.DEFAULT);
            ClusterFixture.publish(producer, 0, 400);
            cluster.awaitDigest(QUEUE, 400, PATIENCE); // node 3, level 4, applied all of it: no batch was written
            int leader = moveLeader(cluster, 0); // an upgraded node leads: node 3, at 4, would refuse 5 as above its own
            assertEquals(4, cluster.get(leader, "/api/cluster").get("entryLevel").asInt());

            assertRefused(raise(cluster, leader, "{\"level\": 5}"), 409, "nodes_behind", "node 3 supports entry levels up to 4");
            assertRefused(raise(cluster, leader, "{\"level\": 9}"), 400, "unsupported_level", "above");
            assertRefused(raise(cluster, leader, "{\"level\": 3}"), 400, "downgrade", "below");
            assertRefused(raise(cluster, leader, "{\"lvl\": 5}"), 400, "bad_request", "{\"level\": N}");
            assertRefused(raise(cluster, leader, "not json"), 400, "bad_json", "JSON");
            assertRefused(raise(cluster, (leader + 1) % 3, "{\"level\": 5}"), 409, "not_leader", "leader");
            awaitEntryLevel(cluster, 4, 0, 1, 2);

            upgrade(cluster, 2);
            leader = awaitLeader(cluster);
            HttpResponse<String> raised = raise(cluster, leader, "{\"level\": 5}");
            assertEquals(200, raised.statusCode(), raised.body());
            assertEquals(5, JSON.readTree(raised.body()).get("entryLevel").asInt());
            awaitEntryLevel(cluster, 5, 0, 1, 2);
            ClusterFixture.publish(producer, 400, 400);
            JsonNode upgraded = cluster.awaitDigest(QUEUE, 800, PATIENCE);

            // Rule R13: below level 6 the leader serves no transaction (TX_BEGIN refused, the capability not granted);
            // raised to 6, a transaction commits on every node.
            try (RawClient raw = RawClient.connected(cluster.clientPorts[leader])) {
                raw.send(new io.sluice.protocol.TxBeginFrame(1, 0));
                io.sluice.protocol.TxAbortedFrame refused = raw.expect(io.sluice.protocol.TxAbortedFrame.class);
                assertEquals(io.sluice.protocol.ErrorCode.NOT_REPLICATED.code(), refused.code(), refused.message());
                assertTrue(refused.message().contains("/api/cluster/feature-level"), refused.message());
            }
            try (Connection before = Connection.connect(cluster.reconnectingOptions())) {
                org.junit.jupiter.api.Assertions.assertThrows(UnsupportedOperationException.class, before::transaction);
            }
            HttpResponse<String> six = raise(cluster, leader, "{\"level\": 6}");
            assertEquals(200, six.statusCode(), six.body());
            awaitEntryLevel(cluster, 6, 0, 1, 2);
            try (Connection after = Connection.connect(cluster.reconnectingOptions())) {
                after.declareQueue("tx", QueueSettings.EMPTY);
                io.sluice.client.Transaction tx = after.transaction();
                tx.publish("tx", Payloads.of(1));
                tx.commit();
            }
            cluster.awaitDigest("tx", 1, PATIENCE);

            // A follower restored from a backup taken before the level entry, with an old broker: killed (its last snapshot
            // marker is from its clean stop before the raise), its level file gone, started at level 4. It replays its
            // log, meets the level entry, and stops there instead of skipping it.
            int old = (leader + 1) % 3;
            ChildJvm.kill(nodes[old]);
            java.nio.file.Files.delete(dir.resolve("node-" + (old + 1)).resolve("entry-level"));
            cluster.startChild(old, nodes, OLD_BROKER);
            TestAwait.until("node " + (old + 1) + " stopping at the level entry", PATIENCE, () -> {
                JsonNode status = cluster.get(old, "/api/cluster");
                return status != null && "HALTED".equals(status.get("role").asText());
            });
            String halted = cluster.get(old, "/api/cluster").get("halted").asText();
            assertTrue(halted.contains("finalizes entry level 5") && halted.contains("upgrade this node's broker"), halted);
            assertTrue(ChildJvm.lines(cluster.log(old)).stream().anyMatch(l -> l.contains("ERROR") && l.contains("finalizes entry level 5")),
                    "an ERROR line names the entry");
            ClusterFixture.publish(producer, 800, 200); // the two others are a majority
            int[] others = {leader, (leader + 2) % 3};
            cluster.awaitSameDigest(QUEUE, PATIENCE, 1000, others);
            assertEquals(upgraded, cluster.get(old, "/api/queues/" + QUEUE + "/digest"),
                    "the stopped node holds what it held, nothing skipped ahead");

            restart(cluster, old, List.of());
            cluster.awaitDigest(QUEUE, 1000, PATIENCE);
            cluster.awaitDigest("tx", 1, PATIENCE); // it replayed the transaction's entry too

            // Raised to 7, the leader records the settings every node must share (rule R2), and every node keeps them.
            HttpResponse<String> seven = raise(cluster, awaitLeader(cluster), "{\"level\": 7}");
            assertEquals(200, seven.statusCode(), seven.body());
            awaitEntryLevel(cluster, 7, 0, 1, 2);
            for (int i = 0; i < 3; i++) {
                java.nio.file.Path settings = dir.resolve("node-" + (i + 1)).resolve("cluster-settings");
                TestAwait.until("node " + (i + 1) + " recording the cluster's settings", PATIENCE, () -> java.nio.file.Files.exists(settings));
                assertTrue(java.nio.file.Files.readString(settings).contains("storage.segment-bytes=" + (64L << 20)),
                        java.nio.file.Files.readString(settings));
            }
            // Raised to 8, the newest: a leader that lost its producers' epoch marks may say so in a PUBLISH (rule R11).
            HttpResponse<String> eight = raise(cluster, awaitLeader(cluster), "{\"level\": 8}");
            assertEquals(200, eight.statusCode(), eight.body());
            awaitEntryLevel(cluster, NEWEST, 0, 1, 2);
        }
    }

    private void startAll(ClusterFixture cluster, List<String> flags) throws Exception {
        for (int i = 0; i < 3; i++) {
            nodes[i] = null;
        }
        // At once: the first to start alone would wait for a majority anyway.
        Thread[] starting = new Thread[3];
        Exception[] failed = new Exception[3];
        for (int i = 0; i < 3; i++) {
            int node = i;
            starting[i] = new Thread(() -> {
                try {
                    cluster.startChild(node, nodes, flags);
                } catch (Exception e) {
                    failed[node] = e;
                }
            });
            starting[i].start();
        }
        for (int i = 0; i < 3; i++) {
            starting[i].join();
            if (failed[i] != null) {
                throw failed[i];
            }
        }
    }

    /** Node {@code node} restarted as a broker of the newest level, once the leader has moved off it (as an operator would). */
    private void upgrade(ClusterFixture cluster, int node) throws Exception {
        restart(cluster, node, List.of());
        TestAwait.until("node " + (node + 1) + " supporting entry level " + NEWEST, PATIENCE, () -> {
            JsonNode status = cluster.get(node, "/api/cluster");
            return status != null && status.get("supportedEntryLevels").path("node " + (node + 1)).asInt() == NEWEST;
        });
    }

    private void restart(ClusterFixture cluster, int node, List<String> flags) throws Exception {
        if (awaitLeader(cluster) == node) {
            moveLeader(cluster, (node + 1) % 3);
        }
        nodes[node].destroy(); // SIGTERM, the operator's stop
        assertTrue(nodes[node].waitFor(60, TimeUnit.SECONDS), "node " + (node + 1) + " stops on SIGTERM");
        cluster.startChild(node, nodes, flags);
    }

    /** Moves the shard's leadership to node {@code to} (0-based) and waits until it serves; returns it. */
    private int moveLeader(ClusterFixture cluster, int to) throws Exception {
        int leader = awaitLeader(cluster);
        if (leader != to) {
            HttpResponse<String> moved = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + cluster.metricsPorts[leader]
                    + "/api/cluster/leader")).POST(HttpRequest.BodyPublishers.ofString("{\"nodeId\": " + (to + 1) + "}"))
                    .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, moved.statusCode(), moved.body());
        }
        TestAwait.until("node " + (to + 1) + " leading and serving", PATIENCE, () -> {
            JsonNode status = cluster.get(to, "/api/cluster");
            return status != null && status.path("serving").asBoolean();
        });
        return to;
    }

    /** The 0-based index of the node that leads and serves. */
    private static int awaitLeader(ClusterFixture cluster) throws InterruptedException {
        return cluster.awaitServing(PATIENCE, 0, 1, 2);
    }

    private static void awaitEntryLevel(ClusterFixture cluster, int level, int... nodes) throws InterruptedException {
        for (int node : nodes) {
            TestAwait.until("node " + (node + 1) + " at entry level " + level, PATIENCE, () -> {
                JsonNode status = cluster.get(node, "/api/cluster");
                return status != null && status.path("entryLevelFinalized").asBoolean() && status.path("entryLevel").asInt() == level;
            });
        }
    }

    private HttpResponse<String> raise(ClusterFixture cluster, int node, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + cluster.metricsPorts[node] + "/api/cluster/feature-level"))
                .POST(HttpRequest.BodyPublishers.ofString(body)).timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static void assertRefused(HttpResponse<String> response, int status, String code, String said) throws Exception {
        assertEquals(status, response.statusCode(), response.body());
        JsonNode body = JSON.readTree(response.body());
        assertEquals(code, body.get("error").asText(), response.body());
        assertNotEquals("", body.get("message").asText(""), response.body());
        assertTrue(body.get("message").asText().contains(said), response.body());
    }
}
