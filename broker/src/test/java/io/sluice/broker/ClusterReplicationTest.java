package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.LeaderHint;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.QueueStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Three cluster nodes in this JVM (docs/replication.md): a follower sends clients to the leader, and what
 * the leader confirmed is stored on every node, under the same message ids, with acks replicated too.
 * Short (about 10 s), so it stays in the default run; the kill -9 failover is {@link ClusterFailoverTest}.
 */
@Tag("cluster")
@Timeout(120)
class ClusterReplicationTest {
    private static final String QUEUE = "replicated";

    @TempDir
    Path dir;
    private final List<Broker> brokers = new ArrayList<>();

    @AfterEach
    void stop() {
        for (Broker broker : brokers) {
            broker.close();
        }
    }

    private Broker awaitLeader() throws InterruptedException {
        return ClusterFixture.awaitLeader(brokers);
    }

    /**
     * A leader stopped gracefully (SIGTERM runs {@link Broker#close}) hands its leadership to a follower first: when its
     * stop returns another node already leads, where before none did until the followers' election timeout had passed
     * and an election was won. Its clients reconnect to a leader, not into an election.
     */
    @Test
    void shouldHandTheLeadershipOverWhenTheLeaderStopsGracefully() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        brokers.addAll(cluster.startInProcess());
        Broker leader = awaitLeader();
        List<Broker> others = brokers.stream().filter(b -> b != leader).toList();
        TestAwait.until("the leader hearing from both followers", Duration.ofSeconds(30),
                () -> leader.cluster().followers().stream().filter(f -> f.lastResponseMs() < 500).count() == 2);
        leader.close();
        List<Object> roles = others.stream().map(b -> b.cluster().status().get("role")).toList();
        assertTrue(roles.contains("LEADER"), "a node leads once the old leader's stop returned: " + roles);
    }

    /**
     * One Raft entry per submission. Ratis's default appends an entry of its own (log metadata: the commit index) after
     * every commit, which doubled the entries every node writes, forces and replicates, and one appended during a
     * leadership transfer lost the target its election (RaftSettings). 50 publishes one at a time: 50 entries (on main
     * about 100).
     */
    @Test
    void shouldWriteOneLogEntryPerSubmission() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        brokers.addAll(cluster.startInProcess());
        Broker leader = awaitLeader();
        try (Connection c = Connection.connect(ConnectionOptions.builder().bootstrap(cluster.bootstrap()).build())) {
            c.declareQueue(QUEUE, QueueSettings.EMPTY);
            Producer producer = c.createProducer(QUEUE, new ProducerOptions(1, 256, 1 << 20, null));
            producer.send(Payloads.of(0), Duration.ofSeconds(10));
            long before = leader.cluster().lastLogIndex();
            for (int i = 1; i <= 50; i++) {
                producer.send(Payloads.of(i), Duration.ofSeconds(10));
            }
            assertEquals(50, leader.cluster().lastLogIndex() - before, "one entry per confirmed publish, none of Ratis's own");
        }
    }

    /**
     * Rule S2: a HELLO that reaches a follower while the leader is gone waits for the election and is answered
     * with the new leader (HELLO_OK if it is this node, else NOT_LEADER naming the other survivor), never with
     * the dead leader's address or {@code leader=?} that would send the client round with its back-off.
     */
    @Test
    void shouldAnswerAHelloDuringAnElectionWithTheNewLeader() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        brokers.addAll(cluster.startInProcess());
        Broker leader = awaitLeader();
        List<Broker> survivors = brokers.stream().filter(b -> b != leader).toList();
        leader.close();
        Broker asked = survivors.get(0);
        Broker other = survivors.get(1);
        try (RawClient raw = new RawClient(asked.port())) {
            raw.send(new HelloFrame(1, 1, "test", 1 << 20, 0, "", ""));
            Object answer = raw.expect(Object.class);
            if (answer instanceof ErrorFrame || answer instanceof CloseFrame) {
                // The refusal of the HELLO (ERROR then CLOSE), or the CLOSE every client of a node gets when it learns a new leader.
                CloseFrame close = answer instanceof CloseFrame c ? c : raw.expect(CloseFrame.class);
                assertEquals(ErrorCode.NOT_LEADER, close.errorCode());
                assertEquals("127.0.0.1:" + other.port(), LeaderHint.leaderAddress(close.reason()),
                        close.reason() + "; the old leader was on port " + leader.port());
                TestAwait.until("the node named serving", Duration.ofSeconds(10), () -> other.cluster().notLeader() == null);
            } else {
                assertTrue(answer instanceof io.sluice.protocol.HelloOkFrame, "HELLO_OK or NOT_LEADER, got " + answer);
                assertEquals(null, asked.cluster().notLeader(), "the node that answered HELLO_OK serves");
            }
        }
    }

    @Test
    void shouldSendClientsToTheLeaderAndStoreWhatItConfirmedOnEveryNode() throws Exception {
        // A snapshot every few entries, so that the restart below starts from one (rule R4).
        ClusterFixture cluster = new ClusterFixture(dir, 3, "  snapshot-every-entries: 5\n");
        brokers.addAll(cluster.startInProcess());
        Broker leader = awaitLeader();
        Broker follower = brokers.stream().filter(b -> b != leader).findFirst().orElseThrow();

        // A follower refuses HELLO with CLOSE NOT_LEADER naming the leader's client listener.
        try (RawClient raw = new RawClient(follower.port())) {
            raw.send(new HelloFrame(1, 1, "test", 1 << 20, 0, "", ""));
            raw.expect(ErrorFrame.class);
            CloseFrame close = raw.expect(CloseFrame.class);
            assertEquals(ErrorCode.NOT_LEADER, close.errorCode());
            assertEquals("127.0.0.1:" + leader.port(), LeaderHint.leaderAddress(close.reason()), close.reason());
        }

        // The client given only the follower's address follows the hint.
        ConnectionOptions options = ConnectionOptions.builder().host("127.0.0.1").port(follower.port()).build();
        int messages = 2_000;
        try (Connection connection = Connection.connect(options)) {
            assertEquals(leader.config().broker.name, connection.brokerName());
            connection.declareQueue(QUEUE, QueueSettings.EMPTY);
            // Rule R4: a message without a producer identity is refused, since a replay after a restart would store it twice.
            try (RawClient raw = RawClient.connected(leader.port())) {
                PublishFrameBuilder anonymous = new PublishFrameBuilder(raw.alloc(), QUEUE);
                anonymous.add(0, 1, List.of(), Payloads.of(-1));
                raw.send(anonymous.build());
                assertEquals(ErrorCode.NOT_REPLICATED.code(), raw.expect(PublishErrorFrame.class).code());
            }
            Producer producer = connection.createProducer(QUEUE, ProducerOptions.DEFAULT);
            List<CompletableFuture<Void>> confirms = new ArrayList<>();
            for (int i = 0; i < messages; i++) {
                confirms.add(producer.sendAsync(Payloads.of(i)));
            }
            CompletableFuture.allOf(confirms.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);

            // Every node holds every confirmed message, under the same ids (the log's order).
            for (Broker b : brokers) {
                TestAwait.until(b.config().broker.name + " storing " + messages + " messages", Duration.ofSeconds(30),
                        () -> b.queues().get(QUEUE) != null && b.queues().get(QUEUE).store().unackedMessages() == messages);
            }
            QueueStore leaderStore = leader.queues().get(QUEUE).store();
            for (Broker b : brokers) {
                QueueStore store = b.queues().get(QUEUE).store();
                assertEquals(leaderStore.writtenIndex(), store.writtenIndex(), b.config().broker.name);
                long last = store.writtenIndex();
                assertEquals(Payloads.sequence(leaderStore.read(last).payloadBytes()), Payloads.sequence(store.read(last).payloadBytes()));
            }

            // A follower restarted replays the log after its snapshot marker: nothing is stored twice.
            int restarted = brokers.indexOf(follower);
            long written = follower.queues().get(QUEUE).store().writtenIndex();
            long committed = leader.cluster().commitIndex();
            TestAwait.until("the follower applying through " + committed, Duration.ofSeconds(30),
                    () -> follower.cluster().appliedIndex() >= committed);
            follower.close();
            try (java.util.stream.Stream<Path> files = java.nio.file.Files.walk(cluster.config(restarted).raftDirectory())) {
                assertTrue(files.anyMatch(f -> f.getFileName().toString().matches("snapshot\\.\\d+_\\d+")),
                        "a snapshot marker was taken");
            }
            brokers.set(restarted, Broker.start(cluster.config(restarted)));
            Broker again = brokers.get(restarted);
            TestAwait.until("the restarted follower applying the log through " + committed, Duration.ofSeconds(30),
                    () -> again.cluster().appliedIndex() >= committed);
            assertEquals(messages, again.queues().get(QUEUE).store().unackedMessages(), "stored once, across the replay");
            assertEquals(written, again.queues().get(QUEUE).store().writtenIndex());
            // Rule R6: the same messages, ids, producers, sequences and payloads on every node, the restarted one included.
            assertEquals(messages, cluster.awaitDigest(QUEUE, messages, Duration.ofSeconds(30)).get("messages").asLong());

            // Acks taken on the leader reach the followers, the restarted one included.
            io.sluice.client.Consumer consumer = connection.subscribe(QUEUE, io.sluice.client.ConsumerOptions.DEFAULT, m -> m.ack());
            for (Broker b : brokers) {
                TestAwait.until(b.config().broker.name + " dropping every acked message", Duration.ofSeconds(30),
                        () -> b.queues().get(QUEUE).store().unackedMessages() == 0);
            }
            consumer.close();
            assertEquals(0, cluster.awaitDigest(QUEUE, 0, Duration.ofSeconds(30)).get("messages").asLong());
        }
    }

    /**
     * Rule R7: a purge removes on every node exactly what it removed on the leader, which keeps what its
     * consumers hold; a delete deletes the queue on every node; both through the wire protocol and the admin
     * API, which a follower refuses with 409 naming the leader.
     */
    @Test
    void shouldPurgeAndDeleteOnEveryNode() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        brokers.addAll(cluster.startInProcess());
        Broker leader = awaitLeader();
        int leaderIndex = brokers.indexOf(leader);
        int followerIndex = (leaderIndex + 1) % 3;
        ConnectionOptions options = ConnectionOptions.builder().bootstrap(cluster.bootstrap()).build();
        try (Connection connection = Connection.connect(options)) {
            connection.declareQueue(QUEUE, QueueSettings.EMPTY);
            Producer producer = connection.createProducer(QUEUE, ProducerOptions.DEFAULT);
            publish(producer, 0, 100);
            // A consumer holds one message, unacked, while the queue is purged: that one stays, on every node.
            java.util.concurrent.BlockingQueue<io.sluice.client.Message> held = new java.util.concurrent.LinkedBlockingQueue<>();
            io.sluice.client.Consumer consumer = connection.subscribe(QUEUE, io.sluice.client.ConsumerOptions.DEFAULT.withCredit(1), held::add);
            io.sluice.client.Message holding = held.poll(30, TimeUnit.SECONDS);
            assertTrue(holding != null, "a delivery");
            assertEquals(99, connection.purgeQueue(QUEUE), "purged: all but the one the consumer holds");
            com.fasterxml.jackson.databind.JsonNode digest = cluster.awaitSameDigest(QUEUE, Duration.ofSeconds(30));
            assertEquals(1, digest.get("messages").asLong(), digest.toString());
            assertEquals(holding.id(), digest.get("firstId").asLong());
            consumer.close();

            // The admin API: a follower refuses and names the leader; the leader purges on every node.
            publish(producer, 100, 50);
            java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
            java.net.http.HttpResponse<String> refused = http.send(post(cluster, followerIndex, "/api/queues/" + QUEUE + "/purge"),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            assertEquals(409, refused.statusCode(), refused.body());
            assertTrue(refused.body().contains("not_leader") && refused.body().contains("127.0.0.1:" + leader.port()), refused.body());
            java.net.http.HttpResponse<String> purged = http.send(post(cluster, leaderIndex, "/api/queues/" + QUEUE + "/purge"),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            assertEquals(200, purged.statusCode(), purged.body());
            assertEquals(51, new com.fasterxml.jackson.databind.ObjectMapper().readTree(purged.body()).get("purgedMessages").asLong(),
                    "the 50 published since and the one the closed consumer held: " + purged.body());
            assertEquals(0, cluster.awaitDigest(QUEUE, 0, Duration.ofSeconds(30)).get("messages").asLong());

            // A delete over the wire deletes the queue on every node; publishes after it find no queue.
            publish(producer, 150, 10);
            producer.close();
            connection.deleteQueue(QUEUE);
            for (Broker b : brokers) {
                TestAwait.until(b.config().broker.name + " deleting the queue", Duration.ofSeconds(30), () -> b.queues().get(QUEUE) == null);
            }
            // Declared again and deleted through the admin API of the leader.
            connection.declareQueue(QUEUE, QueueSettings.EMPTY);
            for (Broker b : brokers) {
                TestAwait.until(b.config().broker.name + " declaring the queue again", Duration.ofSeconds(30), () -> b.queues().get(QUEUE) != null);
            }
            java.net.http.HttpResponse<String> deleted = http.send(java.net.http.HttpRequest.newBuilder(
                    java.net.URI.create("http://127.0.0.1:" + cluster.metricsPorts[leaderIndex] + "/api/queues/" + QUEUE)).DELETE().build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            assertEquals(200, deleted.statusCode(), deleted.body());
            for (Broker b : brokers) {
                TestAwait.until(b.config().broker.name + " deleting the queue again", Duration.ofSeconds(30), () -> b.queues().get(QUEUE) == null);
            }
        }
    }

    /**
     * Rule R7 for a declare through the admin API (and so the console and the CLI): a follower refuses with 409 naming
     * the leader; the leader's declare goes through the shard's log, so every node holds the queue with its settings; a
     * second declare with the same settings finds it, one with other settings is refused as over the wire. It used to be
     * refused on every node (409 {@code not_replicated}).
     */
    @Test
    void shouldDeclareThroughTheLeadersAdminApiOnEveryNode() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        brokers.addAll(cluster.startInProcess());
        Broker leader = awaitLeader();
        int leaderIndex = brokers.indexOf(leader);
        int followerIndex = (leaderIndex + 1) % 3;
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        String settings = "{\"maxDeliveries\": 3, \"quotaHardMessages\": 500}";

        java.net.http.HttpResponse<String> refused = http.send(put(cluster, followerIndex, QUEUE, settings),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertEquals(409, refused.statusCode(), refused.body());
        assertTrue(refused.body().contains("not_leader") && refused.body().contains("127.0.0.1:" + leader.port()), refused.body());

        java.net.http.HttpResponse<String> declared = http.send(put(cluster, leaderIndex, QUEUE, settings),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertEquals(200, declared.statusCode(), declared.body());
        assertTrue(new com.fasterxml.jackson.databind.ObjectMapper().readTree(declared.body()).get("created").asBoolean(), declared.body());
        for (Broker b : brokers) {
            TestAwait.until(b.config().broker.name + " declaring the queue", Duration.ofSeconds(30), () -> b.queues().get(QUEUE) != null);
            assertEquals(3, b.queues().get(QUEUE).options().maxDeliveries(), b.config().broker.name);
            assertEquals(500, b.queues().get(QUEUE).options().quota().hardMessages(), b.config().broker.name);
        }

        java.net.http.HttpResponse<String> again = http.send(put(cluster, leaderIndex, QUEUE, settings),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertEquals(200, again.statusCode(), again.body());
        assertEquals(false, new com.fasterxml.jackson.databind.ObjectMapper().readTree(again.body()).get("created").asBoolean(), again.body());
        java.net.http.HttpResponse<String> other = http.send(put(cluster, leaderIndex, QUEUE, "{\"maxDeliveries\": 4}"),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertEquals(409, other.statusCode(), other.body());
        assertTrue(other.body().contains("queue_exists_with_different_settings"), other.body());
        java.net.http.HttpResponse<String> badName = http.send(put(cluster, leaderIndex, "-bad", "{}"),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertEquals(400, badName.statusCode(), badName.body());
        ClusterFixture.awaitApplied(brokers, leader);
        for (Broker b : brokers) {
            assertEquals(java.util.Set.of(QUEUE), queueNames(b), b.config().broker.name);
        }
    }

    private static java.net.http.HttpRequest put(ClusterFixture cluster, int node, String queue, String body) {
        return java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + cluster.metricsPorts[node] + "/api/queues/" + queue))
                .PUT(java.net.http.HttpRequest.BodyPublishers.ofString(body)).build();
    }

    /**
     * Rule R2, "The queue count": the leader checks {@code limits.max-queues} before it submits a declare, counting the
     * declares it has in flight, and every node applies a committed declare without it. Declares sent together (many in
     * flight at once) are answered as a single broker answers them, and every node holds the same queues; a leader that
     * did not count its declares in flight answered all 40 OK.
     */
    @Test
    void shouldRefuseDeclaresPastMaxQueuesOnTheLeaderCountingThoseInFlight() throws Exception {
        int maxQueues = 20;
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        cluster.overrides = java.util.Map.of("limits.max-queues", Integer.toString(maxQueues));
        brokers.addAll(cluster.startInProcess());
        Broker leader = awaitLeader();
        ConnectionOptions options = ConnectionOptions.builder().bootstrap(cluster.bootstrap()).requestTimeout(Duration.ofSeconds(30)).build();
        List<Connection> connections = new ArrayList<>();
        try {
            for (int c = 0; c < 4; c++) {
                connections.add(Connection.connect(options));
            }
            List<CompletableFuture<Long>> answers = new ArrayList<>();
            for (int i = 0; i < 2 * maxQueues; i++) {
                answers.add(connections.get(i % connections.size()).declareQueueAsync("q-" + i, QueueSettings.EMPTY));
            }
            assertEquals(maxQueues, ConcurrentDeclareTest.answeredOk(answers, maxQueues), "declares answered OK, the others refused");
        } finally {
            connections.forEach(Connection::close);
        }
        ClusterFixture.awaitApplied(brokers, leader);
        java.util.Set<String> leaders = queueNames(leader);
        assertEquals(maxQueues, leaders.size());
        for (Broker b : brokers) {
            assertEquals(leaders, queueNames(b), b.config().broker.name + " holds the leader's queues");
        }
    }

    private static java.util.Set<String> queueNames(Broker broker) {
        java.util.Set<String> names = new java.util.TreeSet<>();
        broker.queues().all().forEach(queue -> names.add(queue.name()));
        return names;
    }

    private static void publish(Producer producer, long from, int count) throws Exception {
        ClusterFixture.publish(producer, from, count);
    }

    private static java.net.http.HttpRequest post(ClusterFixture cluster, int node, String path) {
        return java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + cluster.metricsPorts[node] + path))
                .POST(java.net.http.HttpRequest.BodyPublishers.noBody()).build();
    }
}
