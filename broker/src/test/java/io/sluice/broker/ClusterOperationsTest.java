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
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Operating a cluster (docs/replication.md, "Operating a cluster"): what each node tells about its shard
 * ({@code GET /api/cluster}, the {@code sluice_cluster_*} metrics, {@code sluice admin cluster}), and moving the
 * shard's leadership to a node named by the operator ({@code POST /api/cluster/leader},
 * {@code sluice admin transfer-leader}) while a producer publishes: nothing confirmed is lost or stored twice.
 */
@Tag("cluster")
@Timeout(180)
class ClusterOperationsTest {
    private static final String SHARD = "sluice-shard-0";
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;
    private final List<Broker> brokers = new ArrayList<>();
    private final HttpClient http = HttpClient.newHttpClient();

    @AfterEach
    void stop() {
        for (Broker broker : brokers) {
            broker.close();
        }
    }

    @Test
    void everyNodeTellsItsShardsProgressAndTheLeaderEachFollowers() throws Exception {
        ClusterFixture cluster = startThree();
        Broker leader = ClusterFixture.awaitLeader(brokers);
        int leaderIndex = brokers.indexOf(leader);
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            c.declareQueue("ops", QueueSettings.EMPTY);
            Producer producer = c.createProducer("ops", ProducerOptions.DEFAULT);
            ClusterFixture.publish(producer, 0, 500);
        }
        ClusterFixture.awaitApplied(brokers, leader);
        long committed = leader.cluster().commitIndex();

        // The leader: both followers hold its whole log once their acknowledgements are in.
        TestAwait.until("the leader seeing both followers hold its log", Duration.ofSeconds(30), () -> {
            JsonNode followers = cluster.get(leaderIndex, "/api/cluster").get("followers");
            return followers.size() == 2 && followers.get(0).get("lagEntries").asLong() == 0
                    && followers.get(1).get("lagEntries").asLong() == 0;
        });
        JsonNode status = cluster.get(leaderIndex, "/api/cluster");
        assertEquals("LEADER", status.get("role").asText());
        assertEquals(SHARD, status.get("shard").asText());
        List<Integer> followerIds = new ArrayList<>();
        for (JsonNode f : status.get("followers")) {
            followerIds.add(f.get("nodeId").asInt());
            assertEquals(status.get("lastLogIndex").asLong(), f.get("matchIndex").asLong(), "follower " + f);
        }
        List<Integer> others = new ArrayList<>(List.of(1, 2, 3));
        others.remove(Integer.valueOf(leader.config().cluster.nodeId));
        assertEquals(others, followerIds);

        // Every node applied the same entries, so the same bytes; the leader submitted exactly those.
        long leaderApplied = 0;
        for (int i = 0; i < 3; i++) {
            int node = i;
            TestAwait.until("node " + (i + 1) + " knowing index " + committed + " committed", Duration.ofSeconds(30),
                    () -> metric(cluster, node, "sluice_cluster_commit_index", Map.of("shard", SHARD)) >= committed);
            String scrape = scrape(cluster, i);
            boolean leads = i == leaderIndex;
            assertEquals(leads ? 1.0 : 0.0, value(scrape, "sluice_cluster_leader", Map.of("shard", SHARD)), "node " + (i + 1));
            assertEquals(committed, (long) value(scrape, "sluice_cluster_applied_index", Map.of("shard", SHARD)), "node " + (i + 1));
            double applied = value(scrape, "sluice_cluster_applied_bytes_total", Map.of("shard", SHARD));
            assertTrue(applied > 500 * 8, "node " + (i + 1) + " applied " + applied + " bytes for 500 messages");
            if (i == 0) {
                leaderApplied = (long) applied;
            }
            assertEquals(leaderApplied, (long) applied, "node " + (i + 1) + " applied other bytes than node 1");
            for (int other : others) {
                if (other == i + 1) {
                    continue; // a node has no series of its own
                }
                double lag = value(scrape, "sluice_cluster_follower_lag_entries", Map.of("shard", SHARD, "node", Integer.toString(other)));
                if (leads) {
                    assertEquals(0.0, lag, "the leader's view of node " + other);
                } else {
                    assertTrue(Double.isNaN(lag), "a follower has no view of node " + other + ": " + lag);
                }
            }
            if (leads) {
                assertEquals(leaderApplied, (long) value(scrape, "sluice_cluster_submitted_bytes_total", Map.of("shard", SHARD)),
                        "the leader submitted every entry applied");
            }
        }

        // The CLI shows the same.
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = AdminCli.run(new String[]{"--url", "http://127.0.0.1:" + cluster.metricsPorts[leaderIndex], "cluster"},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        String printed = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, exit, err.toString(StandardCharsets.UTF_8));
        assertTrue(printed.contains("role              LEADER"), printed);
        assertTrue(printed.matches("(?s).*FOLLOWER\\s+MATCH INDEX.*"), printed);
    }

    @Test
    void theLeadershipMovesToTheNodeNamedWhileAProducerPublishesAndNothingIsLostOrDoubled() throws Exception {
        ClusterFixture cluster = startThree();
        Broker leader = ClusterFixture.awaitLeader(brokers);
        int leaderIndex = brokers.indexOf(leader);
        int targetIndex = (leaderIndex + 1) % 3;
        int followerIndex = (leaderIndex + 2) % 3;
        int target = targetIndex + 1;
        long changesBefore = leader.cluster().counters().leaderChanges();

        // Refusals first: each with its code and a sentence.
        assertRefused(post(cluster, followerIndex, "{\"nodeId\": " + target + "}"), 409, "not_leader");
        assertRefused(post(cluster, leaderIndex, "{\"nodeId\": 9}"), 400, "unknown_node");
        assertRefused(post(cluster, leaderIndex, "{\"node\": 2}"), 400, "bad_request");
        assertRefused(post(cluster, leaderIndex, "not json"), 400, "bad_json");
        assertEquals(leaderIndex, brokers.indexOf(ClusterFixture.awaitLeader(brokers)), "a refused transfer moved nothing");

        Set<Long> confirmed = ConcurrentHashMap.newKeySet();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        int total = 4_000;
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            c.declareQueue("moved", QueueSettings.EMPTY);
            Producer producer = c.createProducer("moved", ProducerOptions.DEFAULT);
            long[] next = {0};
            Thread publisher = new Thread(() -> {
                try {
                    ClusterFixture.publishNumbered(producer, total, 64, next, confirmed);
                } catch (Throwable t) {
                    failed.set(t);
                }
            }, "ops-publisher");
            publisher.start();
            TestAwait.until("a first part confirmed", Duration.ofSeconds(60), () -> confirmed.size() >= 200 || failed.get() != null);

            // The operator's command, while confirms are in flight.
            // A transfer may answer 503 transfer_failed (docs/replication.md: the target lost its election, to the old
            // leader or to the third node); the operator then asks whoever leads now, as the docs say. At most three tries.
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int askedIndex = leaderIndex;
            int exit = -1;
            for (int attempt = 0; attempt < 3 && exit != 0; attempt++) {
                if (attempt > 0) {
                    assertTrue(err.toString(StandardCharsets.UTF_8).contains("transfer_failed"), err.toString(StandardCharsets.UTF_8));
                    askedIndex = brokers.indexOf(ClusterFixture.awaitLeader(brokers));
                    if (askedIndex == targetIndex) {
                        exit = 0; // the election the failed transfer caused chose the target after all
                        out.reset();
                        out.writeBytes(("node " + target + " leads the shard now\n").getBytes(StandardCharsets.UTF_8));
                        break;
                    }
                    out.reset();
                    err.reset();
                }
                exit = AdminCli.run(new String[]{"--url", "http://127.0.0.1:" + cluster.metricsPorts[askedIndex], "transfer-leader",
                        Integer.toString(target)}, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
            }
            assertEquals(0, exit, err.toString(StandardCharsets.UTF_8));
            assertEquals("node " + target + " leads the shard now", out.toString(StandardCharsets.UTF_8).trim());
            assertTrue(confirmed.size() < total, "the transfer came while the producer was still publishing");

            publisher.join(120_000);
            if (failed.get() != null) {
                throw new AssertionError("the producer failed", failed.get());
            }
        }
        assertEquals(targetIndex, brokers.indexOf(ClusterFixture.awaitLeader(brokers)), "node " + target + " leads");
        assertTrue(leader.cluster().counters().leaderChanges() > changesBefore, "the old leader counted the change");
        assertEquals(total, confirmed.size());

        // Every number confirmed is stored once, on every node.
        assertEquals(total, cluster.awaitDigest("moved", total, Duration.ofSeconds(30)).get("messages").asLong());
        Map<Long, Integer> received = new TreeMap<>();
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            var consumer = c.subscribe("moved", ConsumerOptions.DEFAULT);
            while (received.values().stream().mapToInt(Integer::intValue).sum() < total) {
                var m = consumer.receive(Duration.ofSeconds(30));
                assertTrue(m != null, "only " + received.size() + " of " + total + " delivered");
                received.merge(ByteBuffer.wrap(m.payload()).getLong(), 1, Integer::sum);
                m.ack();
            }
        }
        assertEquals(confirmed, received.keySet());
        assertTrue(received.values().stream().allMatch(n -> n == 1), "each once");
    }

    private ClusterFixture startThree() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        brokers.addAll(cluster.startInProcess());
        return cluster;
    }

    private HttpResponse<String> post(ClusterFixture cluster, int node, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + cluster.metricsPorts[node] + "/api/cluster/leader"))
                .POST(HttpRequest.BodyPublishers.ofString(body)).timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static void assertRefused(HttpResponse<String> response, int status, String code) throws Exception {
        assertEquals(status, response.statusCode(), response.body());
        JsonNode body = JSON.readTree(response.body());
        assertEquals(code, body.get("error").asText(), response.body());
        assertNotEquals("", body.get("message").asText(""), response.body());
    }

    private String scrape(ClusterFixture cluster, int node) {
        try {
            return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + cluster.metricsPorts[node] + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private double metric(ClusterFixture cluster, int node, String name, Map<String, String> labels) {
        return value(scrape(cluster, node), name, labels);
    }

    /** The value of the series {@code name} whose labels include {@code labels}; fails if there is none. */
    private static double value(String scrape, String name, Map<String, String> labels) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "\\{([^}]*)} (\\S+)$").matcher(scrape);
        while (m.find()) {
            String found = m.group(1);
            if (labels.entrySet().stream().allMatch(e -> found.contains(e.getKey() + "=\"" + e.getValue() + "\""))) {
                return Double.parseDouble(m.group(2));
            }
        }
        throw new AssertionError("no series " + name + labels + " in the scrape; its " + name + " lines: "
                + scrape.lines().filter(l -> l.startsWith(name)).toList());
    }
}
