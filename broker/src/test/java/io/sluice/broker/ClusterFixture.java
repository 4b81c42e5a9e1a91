package io.sluice.broker;

import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;

import java.io.IOException;
import java.time.Duration;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A cluster of brokers for tests (docs/replication.md): free client and Raft ports, a data
 * directory and a configuration file per node, written the way an operator would (the node list in YAML,
 * which overrides cannot carry). Nodes run in this JVM ({@link #startInProcess}) or as child JVMs started
 * with {@code --config} ({@link ClusterFailoverTest}). Every node is on 127.0.0.1, or, given a {@link NodeNetwork},
 * each child JVM runs in its node's network namespace and listens on its node's address there
 * ({@link ClusterPartitionTest}).
 */
final class ClusterFixture {
    final int size;
    final int[] clientPorts;
    final int[] raftPorts;
    final int[] metricsPorts;
    final int[] snapshotPorts;
    final Path[] configs;
    final Path dir;
    /** Every node's address: 127.0.0.1, or its namespace's. */
    final String[] hosts;
    /** The namespaces the child JVMs run in, or null: all on 127.0.0.1 in this namespace. */
    private final NodeNetwork network;

    ClusterFixture(Path dir, int size) throws IOException {
        this(dir, size, "");
    }

    /** {@code clusterKeys}: more lines of the {@code cluster} section, each indented by two spaces. */
    ClusterFixture(Path dir, int size, String clusterKeys) throws IOException {
        this(dir, size, clusterKeys, "", "");
    }

    /** More lines of the {@code cluster}, {@code broker} and {@code storage} sections, each indented by two spaces. */
    ClusterFixture(Path dir, int size, String clusterKeys, String brokerKeys, String storageKeys) throws IOException {
        this(dir, size, null, clusterKeys, brokerKeys, storageKeys);
    }

    /**
     * Nodes in {@code network}'s namespaces, one each, listening (clients, admin API, Raft, snapshots) on their
     * node's address, anonymous clients allowed there (the addresses are the test's own bridge).
     */
    ClusterFixture(Path dir, NodeNetwork network, int size, String clusterKeys, String brokerKeys, String storageKeys) throws IOException {
        this(dir, size, network, clusterKeys, brokerKeys, storageKeys);
    }

    /**
     * {@code founders} nodes that form the cluster, and {@code joining} more whose configurations list every node and
     * say {@code join: true} (docs/replication.md, "Adding a node"): they start with no membership and wait to be added.
     * The founders' {@code cluster.nodes} lists the founders only, as an existing cluster's configuration would.
     */
    static ClusterFixture withJoining(Path dir, int founders, int joining) throws IOException {
        return new ClusterFixture(dir, founders + joining, founders, null, "", "", "");
    }

    /** As {@link #withJoining}, with the snapshot tests' settings of {@link #snapshotting}: a node added late must fetch a snapshot. */
    static ClusterFixture snapshottingWithJoining(Path dir, int founders, int joining) throws IOException {
        return new ClusterFixture(dir, founders + joining, founders, null, SNAPSHOTTING_CLUSTER, SNAPSHOTTING_BROKER, SNAPSHOTTING_STORAGE);
    }

    private ClusterFixture(Path dir, int size, NodeNetwork network, String clusterKeys, String brokerKeys, String storageKeys)
            throws IOException {
        this(dir, size, size, network, clusterKeys, brokerKeys, storageKeys);
    }

    private ClusterFixture(Path dir, int size, int founders, NodeNetwork network, String clusterKeys, String brokerKeys,
                           String storageKeys) throws IOException {
        this.dir = dir;
        this.size = size;
        this.network = network;
        hosts = new String[size];
        for (int i = 0; i < size; i++) {
            hosts[i] = network == null ? "127.0.0.1" : network.host(i);
        }
        clientPorts = new int[size];
        raftPorts = new int[size];
        metricsPorts = new int[size];
        snapshotPorts = new int[size];
        configs = new Path[size];
        for (int i = 0; i < size; i++) {
            clientPorts[i] = TestPorts.free();
            raftPorts[i] = TestPorts.free();
            metricsPorts[i] = TestPorts.free();
            snapshotPorts[i] = TestPorts.free();
        }
        // The cluster's shared secret (docs/security.md, "The snapshot port"): one file, readable by its owner alone.
        Path secret = dir.resolve("cluster-secret");
        Files.writeString(secret, java.util.UUID.randomUUID() + "-" + java.util.UUID.randomUUID() + "\n");
        Files.setPosixFilePermissions(secret, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        StringBuilder nodes = new StringBuilder();
        StringBuilder founding = new StringBuilder();
        for (int i = 0; i < size; i++) {
            if (i == founders) {
                founding.append(nodes);
            }
            nodes.append("    - {id: ").append(i + 1).append(", host: ").append(hosts[i]).append(", raft-port: ").append(raftPorts[i])
                    .append(", client-port: ").append(clientPorts[i]).append(", snapshot-port: ").append(snapshotPorts[i]).append("}\n");
        }
        if (founders == size) {
            founding.append(nodes);
        }
        for (int i = 0; i < size; i++) {
            boolean joins = i >= founders;
            configs[i] = dir.resolve("node-" + (i + 1) + ".yaml");
            Files.writeString(configs[i], "broker:\n"
                    + "  name: node-" + (i + 1) + "\n"
                    + "  port: " + clientPorts[i] + "\n"
                    + "  data-dir: " + dir.resolve("node-" + (i + 1)) + "\n"
                    + brokerKeys
                    + (network == null ? "" : "  listen-address: " + hosts[i] + "\n"
                            + "auth:\n  allow-anonymous-remote: true\n")
                    + "metrics:\n"
                    + "  port: " + metricsPorts[i] + "\n"
                    + (network == null ? "" : "  listen-address: " + hosts[i] + "\n  allow-anonymous-remote: true\n")
                    + "storage:\n"
                    + "  reserved-disk-bytes: 67108864\n"
                    + storageKeys
                    + "cluster:\n"
                    + "  enabled: true\n"
                    + "  node-id: " + (i + 1) + "\n"
                    + "  secret-file: " + secret + "\n"
                    + clusterKeys
                    + (joins ? "  join: true\n" : "")
                    + "  nodes:\n" + (joins ? nodes : founding));
        }
    }

    /**
     * Three nodes whose leader, cut off from both followers ({@link #closeAllBut}), keeps leading at least 8 s (its maximum
     * election timeout) after it last heard from them instead of 1.5 s, so that a request the test sends it then reaches
     * its log before it steps down even on a loaded machine ({@link #rejoinBehindOldLeader}). Elections take up to 8 s.
     */
    static ClusterFixture slowToStepDown(Path dir) throws IOException {
        return new ClusterFixture(dir, 3, "  election-timeout-max-ms: 8000\n");
    }

    /**
     * Three nodes that snapshot every 100 entries, with 1 MiB Raft log segments (so that the leader purges its log
     * past a follower that is down soon) and room for 64 KiB messages: the snapshot tests' cluster (rule R4).
     */
    static ClusterFixture snapshotting(Path dir) throws IOException {
        return new ClusterFixture(dir, 3, SNAPSHOTTING_CLUSTER, SNAPSHOTTING_BROKER, SNAPSHOTTING_STORAGE);
    }

    private static final String SNAPSHOTTING_CLUSTER = "  snapshot-every-entries: 100\n  log-segment-bytes: 1048576\n";
    private static final String SNAPSHOTTING_BROKER = "  max-frame-bytes: 1048576\n";
    private static final String SNAPSHOTTING_STORAGE = "  max-message-bytes: 65536\n";

    /** Options for a client of this cluster that follows the leader through kills: quick reconnects, patient requests. */
    io.sluice.client.ConnectionOptions reconnectingOptions() {
        return io.sluice.client.ConnectionOptions.builder().bootstrap(bootstrap())
                .reconnectPolicy(new io.sluice.client.ReconnectPolicy(true, Duration.ofMillis(50), Duration.ofMillis(500), 2.0, 0.2))
                .connectTimeout(Duration.ofSeconds(60)).requestTimeout(Duration.ofSeconds(60)).build();
    }

    /**
     * Publishes {@code count} payloads of {@code payloadBytes}, each starting with the next number of {@code next},
     * adds each confirmed number to {@code confirmed}, and waits for every confirm (up to 120 s).
     */
    static void publishNumbered(io.sluice.client.Producer producer, int count, int payloadBytes, long[] next,
                                java.util.Set<Long> confirmed) throws Exception {
        List<java.util.concurrent.CompletableFuture<Void>> sends = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            long sequence = next[0]++;
            byte[] payload = new byte[payloadBytes];
            java.nio.ByteBuffer.wrap(payload).putLong(sequence);
            sends.add(producer.sendAsync(payload).thenRun(() -> confirmed.add(sequence)));
        }
        java.util.concurrent.CompletableFuture.allOf(sends.toArray(java.util.concurrent.CompletableFuture[]::new))
                .get(120, java.util.concurrent.TimeUnit.SECONDS);
    }

    /**
     * Consumes {@code queue} through {@code connection}, acknowledging each message, until as many came as
     * {@code confirmed} holds (up to 120 s), and asserts that they are the confirmed numbers of {@link #publishNumbered},
     * each once.
     */
    static void consumeEachOnce(io.sluice.client.Connection connection, String queue, java.util.Set<Long> confirmed)
            throws Exception {
        List<Long> consumed = new ArrayList<>();
        io.sluice.client.Consumer consumer = connection.subscribe(queue, io.sluice.client.ConsumerOptions.DEFAULT, m -> {
            synchronized (consumed) {
                consumed.add(java.nio.ByteBuffer.wrap(m.payload()).getLong());
            }
            m.ack();
        });
        TestAwait.until("every confirmed message consumed", Duration.ofSeconds(120), () -> {
            synchronized (consumed) {
                return consumed.size() >= confirmed.size();
            }
        });
        consumer.close();
        synchronized (consumed) {
            org.junit.jupiter.api.Assertions.assertEquals(confirmed.size(), consumed.size(), "messages consumed (none twice)");
            org.junit.jupiter.api.Assertions.assertEquals(new java.util.HashSet<>(confirmed), new java.util.HashSet<>(consumed),
                    "the confirmed messages");
        }
    }

    /** The node of {@code brokers} that serves as the leader, once one does (up to 30 s). */
    static Broker awaitLeader(List<Broker> brokers) throws InterruptedException {
        Broker[] leader = new Broker[1];
        TestAwait.until("one node serving as the leader", Duration.ofSeconds(30), () -> {
            for (Broker b : brokers) {
                if (b.cluster().notLeader() == null) {
                    leader[0] = b;
                    return true;
                }
            }
            return false;
        });
        return leader[0];
    }

    /** The node of {@code candidates} (0-based) whose admin API says it serves clients, once one does (up to 60 s). */
    int awaitServing(int... candidates) throws InterruptedException {
        return awaitServing(Duration.ofSeconds(60), candidates);
    }

    /**
     * Waits until every node of {@code brokers} counts as many deliveries of each of {@code ids} in {@code queue} as
     * {@code leader} does (up to 30 s each). Rule R10 submits a dispatch's deliveries entry after the deliveries and
     * does not wait for it, so {@link #awaitApplied} called once a client has its messages may read a commit index
     * that does not cover that entry yet.
     */
    static void awaitDeliveriesReplicated(List<Broker> brokers, Broker leader, String queue, List<Long> ids)
            throws InterruptedException {
        for (long id : ids) {
            int count = leader.queues().get(queue).store().deliveryCount(id);
            for (Broker b : brokers) {
                TestAwait.until(b.config().broker.name + " counting " + count + " deliveries of message " + id + " in '" + queue + "'",
                        Duration.ofSeconds(30), () -> b.queues().get(queue).store().deliveryCount(id) >= count);
            }
        }
    }

    /** Waits until every node of {@code brokers} has applied the log as far as {@code leader} has committed it (up to 30 s each). */
    static void awaitApplied(List<Broker> brokers, Broker leader) throws InterruptedException {
        long committed = leader.cluster().commitIndex();
        for (Broker b : brokers) {
            TestAwait.until(b.config().broker.name + " applying through " + committed, Duration.ofSeconds(30),
                    () -> b.cluster().appliedIndex() >= committed);
        }
    }

    /**
     * Closes every node of {@code brokers} but {@code keep} (0-based, the leader) and takes it off {@code running}: a leader
     * cut off from its followers. Notes the leader's last log index then ({@link #rejoinBehindOldLeader} needs its log to
     * grow past it): a follower's log ends at or before its leader's, so no entry after that index reached a follower.
     */
    void closeAllBut(List<Broker> brokers, int keep, List<Broker> running) {
        for (int i = 0; i < brokers.size(); i++) {
            if (i != keep) {
                brokers.get(i).close();
                running.remove(brokers.get(i));
            }
        }
        cutOffAt = brokers.get(keep).cluster().lastLogIndex();
    }

    /** The kept node's last log index when {@link #closeAllBut} closed the others; -1 before. */
    private long cutOffAt = -1;

    /**
     * With every node closed: starts every node but {@code oldLeader} (0-based), waits for them to elect a leader of
     * their own, then starts {@code oldLeader}, which can only follow it, and waits until every node has applied what
     * that leader committed. Adds each node started to {@code running}; returns them, {@code oldLeader} last.
     */
    List<Broker> restartFollowersThenOldLeader(int oldLeader, List<Broker> running) throws InterruptedException {
        List<Broker> restarted = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            if (i != oldLeader) {
                Broker b = Broker.start(config(i));
                running.add(b);
                restarted.add(b);
            }
        }
        Broker newLeader = awaitLeader(restarted);
        Broker old = Broker.start(config(oldLeader));
        running.add(old);
        restarted.add(old);
        awaitApplied(restarted, newLeader);
        return restarted;
    }

    /**
     * With only {@code oldLeader} (node {@code oldLeaderIndex}, 0-based) up, its log longer than the others' (entries it
     * could not commit while cut off): starts the next node, checks that only the old leader can win the election, then
     * starts the last node. Adds both to {@code running}. Waits first for what it assumes: the old leader's log grew past
     * where it was when {@link #closeAllBut} cut it off. A request sent to it once cut off is appended only if it arrives
     * before the leader steps down, for want of a majority, its maximum election timeout after the followers went silent;
     * on a loaded machine it did not always, and either node could then win ({@link #slowToStepDown} gives it time).
     */
    void rejoinBehindOldLeader(Broker oldLeader, int oldLeaderIndex, List<Broker> running) throws InterruptedException {
        long cut = cutOffAt;
        TestAwait.until("the cut-off leader's log growing past index " + cut + ", the last its followers can hold (the "
                + "request's entry appended before it stepped down)", Duration.ofSeconds(30), () -> oldLeader.cluster().lastLogIndex() > cut);
        Broker follower = Broker.start(config((oldLeaderIndex + 1) % size));
        running.add(follower);
        org.junit.jupiter.api.Assertions.assertSame(oldLeader, awaitLeader(List.of(oldLeader, follower)),
                "only the node with the longer log can lead");
        running.add(Broker.start(config((oldLeaderIndex + 2) % size)));
    }

    /** Publishes test payloads {@code from} .. {@code from + count - 1} and waits for every confirm (up to 60 s). */
    static void publish(io.sluice.client.Producer producer, long from, int count) throws Exception {
        List<java.util.concurrent.CompletableFuture<Void>> confirms = new ArrayList<>();
        for (long i = from; i < from + count; i++) {
            confirms.add(producer.sendAsync(Payloads.of(i)));
        }
        java.util.concurrent.CompletableFuture.allOf(confirms.toArray(java.util.concurrent.CompletableFuture[]::new))
                .get(60, java.util.concurrent.TimeUnit.SECONDS);
    }

    /**
     * Consumes {@code count} messages of {@code queue} from whichever node leads, acking each; returns the sequences of
     * their test payloads ({@link Payloads}).
     */
    java.util.Set<Long> consumeAll(String queue, int count) throws Exception {
        java.util.Set<Long> received = new java.util.TreeSet<>();
        try (io.sluice.client.Connection c = io.sluice.client.Connection.connect(reconnectingOptions())) {
            io.sluice.client.Consumer consumer = c.subscribe(queue, new io.sluice.client.ConsumerOptions(count, 128, Duration.ofMillis(1)));
            while (received.size() < count) {
                io.sluice.client.Message m = consumer.receive(Duration.ofSeconds(30));
                org.junit.jupiter.api.Assertions.assertNotNull(m, "only " + received.size() + " delivered");
                received.add(Payloads.sequence(m.payload()));
                m.ack();
            }
        }
        return received;
    }

    /** The sequences {@code from} .. {@code to - 1}, in order. */
    static java.util.TreeSet<Long> sequences(long from, long to) {
        return java.util.stream.LongStream.range(from, to).boxed().collect(java.util.stream.Collectors.toCollection(java.util.TreeSet::new));
    }

    /** Asks node {@code leader} (0-based) to hand the leadership to node {@code target} (0-based), as an operator would. */
    void moveLeader(int leader, int target) throws Exception {
        java.net.http.HttpResponse<String> moved = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
                        java.net.URI.create("http://" + hosts[leader] + ":" + metricsPorts[leader] + "/api/cluster/leader"))
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{\"nodeId\": " + (target + 1) + "}"))
                .timeout(Duration.ofSeconds(30)).build(), java.net.http.HttpResponse.BodyHandlers.ofString());
        org.junit.jupiter.api.Assertions.assertEquals(200, moved.statusCode(), moved.body());
    }

    /** host:port of every node's client listener, for {@code ConnectionOptions.bootstrap}. */
    List<String> bootstrap() {
        List<String> addresses = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            addresses.add(hosts[i] + ":" + clientPorts[i]);
        }
        return addresses;
    }

    /** Settings every node started in this JVM loads over its file ({@link ConfigLoader}'s overrides), e.g. limits. */
    Map<String, String> overrides = Map.of();

    BrokerConfig config(int node) {
        return new ConfigLoader().load(configs[node], overrides);
    }

    /** Starts every node in this JVM, concurrently (each waits for no other, but a leader needs a majority). */
    List<Broker> startInProcess() throws Exception {
        return startInProcess(size);
    }

    /** Starts the first {@code count} nodes in this JVM, as {@link #startInProcess()} starts them all. */
    List<Broker> startInProcess(int count) throws Exception {
        List<java.util.concurrent.CompletableFuture<Broker>> starting = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            BrokerConfig config = config(i);
            starting.add(java.util.concurrent.CompletableFuture.supplyAsync(() -> Broker.start(config)));
        }
        List<Broker> brokers = new ArrayList<>();
        for (java.util.concurrent.CompletableFuture<Broker> broker : starting) {
            brokers.add(broker.get(60, java.util.concurrent.TimeUnit.SECONDS));
        }
        return brokers;
    }

    /**
     * Starts every node as a child JVM at once into {@code processes} (filled before waiting, so that the
     * caller's clean-up kills them if the wait fails), then waits for each to listen: up to 90 s, as three
     * JVMs starting Ratis at once on a loaded two-core machine took over 30 s.
     */
    void startChildren(Process[] processes) throws Exception {
        for (int i = 0; i < size; i++) {
            processes[i] = startChildJvm(i, List.of());
        }
        for (int i = 0; i < size; i++) {
            ChildJvm.awaitListening(processes[i], hosts[i], clientPorts[i], log(i), Duration.ofSeconds(90));
        }
    }

    /**
     * Starts node {@code node} (0-based) as a child JVM writing to {@code node-N.log} into {@code processes[node]}
     * (before waiting, so that the caller's clean-up kills it if the wait fails); returns once it listens.
     */
    void startChild(int node, Process[] processes) throws Exception {
        startChild(node, processes, List.of());
    }

    /** As {@link #startChild(int, Process[])}, with {@code jvmFlags} (e.g. {@code -Dsluice.crash-point=...}). */
    void startChild(int node, Process[] processes, List<String> jvmFlags) throws Exception {
        processes[node] = startChildJvm(node, jvmFlags);
        ChildJvm.awaitListening(processes[node], hosts[node], clientPorts[node], log(node), Duration.ofSeconds(90));
    }

    private Process startChildJvm(int node, List<String> jvmFlags) throws IOException {
        return ChildJvm.start(log(node), network == null ? List.of() : network.commandPrefix(node), jvmFlags, Main.class,
                "--config", configs[node].toString());
    }

    /**
     * The backlog (unacknowledged messages) of {@code queue} on node {@code node}, read from its admin API
     * (which a follower serves too), or -1 if the node does not answer or has no such queue.
     */
    long backlog(int node, String queue) {
        com.fasterxml.jackson.databind.JsonNode described = get(node, "/api/queues/" + queue);
        return described == null ? -1 : described.get("backlogMessages").asLong();
    }

    /**
     * The shard's current term on node {@code node}, from its admin API ({@code GET /api/cluster}), or -1 if
     * it does not answer. Each election round raises it by one.
     */
    long term(int node) {
        com.fasterxml.jackson.databind.JsonNode status = get(node, "/api/cluster");
        return status == null || !status.has("term") ? -1 : status.get("term").asLong();
    }

    /**
     * Polls until every node reports the same digest of {@code queue} (rule R6 of docs/replication.md: same log,
     * same stored messages, under the same ids) and returns it; fails naming each node's digest if they still
     * differ at the deadline, which a node that stored a message twice, under another id, or not at all would.
     */
    com.fasterxml.jackson.databind.JsonNode awaitSameDigest(String queue, java.time.Duration timeout) throws InterruptedException {
        int[] every = new int[size];
        java.util.Arrays.setAll(every, i -> i);
        return awaitSameDigest(queue, timeout, every);
    }

    /**
     * As {@link #awaitSameDigest(String, Duration)}, until the digest the nodes agree on holds {@code messages}: the
     * nodes agree at every applied index, so a test that expects a count after acks or publishes still being applied
     * (a leader stores acks when it applies them too, rule R5) waits for that count, not for the first agreement.
     */
    com.fasterxml.jackson.databind.JsonNode awaitDigest(String queue, long messages, java.time.Duration timeout) throws InterruptedException {
        int[] every = new int[size];
        java.util.Arrays.setAll(every, i -> i);
        return awaitSameDigest(queue, timeout, messages, every);
    }

    /** As {@link #awaitSameDigest(String, Duration)}, on {@code nodes} (0-based) only: the side of a partition. */
    com.fasterxml.jackson.databind.JsonNode awaitSameDigest(String queue, java.time.Duration timeout, int... nodes)
            throws InterruptedException {
        return awaitSameDigest(queue, timeout, -1, nodes);
    }

    /** As {@link #awaitSameDigest(String, Duration, int...)}; with {@code messages} at least 0, until they agree on that count. */
    com.fasterxml.jackson.databind.JsonNode awaitSameDigest(String queue, java.time.Duration timeout, long messages, int... nodes)
            throws InterruptedException {
        com.fasterxml.jackson.databind.JsonNode[] digests = new com.fasterxml.jackson.databind.JsonNode[nodes.length];
        try {
            TestAwait.until("nodes " + java.util.Arrays.toString(nodes) + " (0-based) reporting the same digest of queue '" + queue + "'",
                    timeout, () -> {
                for (int i = 0; i < nodes.length; i++) { // every node's, so that a failure names each
                    digests[i] = get(nodes[i], "/api/queues/" + queue + "/digest");
                }
                for (com.fasterxml.jackson.databind.JsonNode digest : digests) {
                    if (digest == null || !digest.equals(digests[0]) || messages >= 0 && digest.get("messages").asLong() != messages) {
                        return false;
                    }
                }
                return true;
            });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; the nodes' digests: " + java.util.Arrays.toString(digests), e);
        }
        return digests[0];
    }

    /** The node of {@code candidates} (0-based) that serves clients, once one does (up to {@code timeout}). */
    int awaitServing(Duration timeout, int... candidates) throws InterruptedException {
        int[] serving = {-1};
        TestAwait.until("one of nodes " + java.util.Arrays.toString(candidates) + " (0-based) serving", timeout, () -> {
            for (int node : candidates) {
                com.fasterxml.jackson.databind.JsonNode status = get(node, "/api/cluster");
                if (status != null && status.path("serving").asBoolean()) {
                    serving[0] = node;
                    return true;
                }
            }
            return false;
        });
        return serving[0];
    }

    /** The JSON answer of node {@code node}'s admin API at {@code path}, or null if it does not answer 200. */
    com.fasterxml.jackson.databind.JsonNode get(int node, String path) {
        String body = text(node, path);
        try {
            return body == null ? null : new com.fasterxml.jackson.databind.ObjectMapper().readTree(body);
        } catch (IOException e) {
            return null;
        }
    }

    /** The body of node {@code node}'s admin API answer at {@code path} (e.g. {@code /metrics}), or null if it does not answer 200. */
    String text(int node, String path) {
        try {
            java.net.http.HttpResponse<String> response = java.net.http.HttpClient.newHttpClient().send(
                    java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://" + hosts[node] + ":" + metricsPorts[node] + path))
                            .timeout(java.time.Duration.ofSeconds(5)).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            return response.statusCode() != 200 ? null : response.body();
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    Path log(int node) {
        return dir.resolve("node-" + (node + 1) + ".log");
    }
}
