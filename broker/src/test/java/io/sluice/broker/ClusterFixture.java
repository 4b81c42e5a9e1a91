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
 * A cluster of brokers on 127.0.0.1 for tests (docs/replication.md): free client and Raft ports, a data
 * directory and a configuration file per node, written the way an operator would (the node list in YAML,
 * which overrides cannot carry). Nodes run in this JVM ({@link #startInProcess}) or as child JVMs started
 * with {@code --config} ({@link ClusterFailoverTest}).
 */
final class ClusterFixture {
    final int size;
    final int[] clientPorts;
    final int[] raftPorts;
    final int[] metricsPorts;
    final int[] snapshotPorts;
    final Path[] configs;
    final Path dir;

    ClusterFixture(Path dir, int size) throws IOException {
        this(dir, size, "");
    }

    /** {@code clusterKeys}: more lines of the {@code cluster} section, each indented by two spaces. */
    ClusterFixture(Path dir, int size, String clusterKeys) throws IOException {
        this(dir, size, clusterKeys, "", "");
    }

    /** More lines of the {@code cluster}, {@code broker} and {@code storage} sections, each indented by two spaces. */
    ClusterFixture(Path dir, int size, String clusterKeys, String brokerKeys, String storageKeys) throws IOException {
        this.dir = dir;
        this.size = size;
        clientPorts = new int[size];
        raftPorts = new int[size];
        metricsPorts = new int[size];
        snapshotPorts = new int[size];
        configs = new Path[size];
        for (int i = 0; i < size; i++) {
            clientPorts[i] = ChildJvm.freePort();
            raftPorts[i] = ChildJvm.freePort();
            metricsPorts[i] = ChildJvm.freePort();
            snapshotPorts[i] = ChildJvm.freePort();
        }
        StringBuilder nodes = new StringBuilder();
        for (int i = 0; i < size; i++) {
            nodes.append("    - {id: ").append(i + 1).append(", host: 127.0.0.1, raft-port: ").append(raftPorts[i])
                    .append(", client-port: ").append(clientPorts[i]).append(", snapshot-port: ").append(snapshotPorts[i]).append("}\n");
        }
        for (int i = 0; i < size; i++) {
            configs[i] = dir.resolve("node-" + (i + 1) + ".yaml");
            Files.writeString(configs[i], "broker:\n"
                    + "  name: node-" + (i + 1) + "\n"
                    + "  port: " + clientPorts[i] + "\n"
                    + "  data-dir: " + dir.resolve("node-" + (i + 1)) + "\n"
                    + brokerKeys
                    + "metrics:\n"
                    + "  port: " + metricsPorts[i] + "\n"
                    + "storage:\n"
                    + "  reserved-disk-bytes: 67108864\n"
                    + storageKeys
                    + "cluster:\n"
                    + "  enabled: true\n"
                    + "  node-id: " + (i + 1) + "\n"
                    + clusterKeys
                    + "  nodes:\n" + nodes);
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

    /** Waits until every node of {@code brokers} has applied the log as far as {@code leader} has committed it (up to 30 s each). */
    static void awaitApplied(List<Broker> brokers, Broker leader) throws InterruptedException {
        long committed = leader.cluster().commitIndex();
        for (Broker b : brokers) {
            TestAwait.until(b.config().broker.name + " applying through " + committed, Duration.ofSeconds(30),
                    () -> b.cluster().appliedIndex() >= committed);
        }
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

    /** host:port of every node's client listener, for {@code ConnectionOptions.bootstrap}. */
    List<String> bootstrap() {
        List<String> addresses = new ArrayList<>();
        for (int port : clientPorts) {
            addresses.add("127.0.0.1:" + port);
        }
        return addresses;
    }

    BrokerConfig config(int node) {
        return new ConfigLoader().load(configs[node], Map.of());
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
            processes[i] = ChildJvm.start(log(i), Main.class, "--config", configs[i].toString());
        }
        for (int i = 0; i < size; i++) {
            ChildJvm.awaitListening(processes[i], clientPorts[i], log(i), Duration.ofSeconds(90));
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
        Path log = dir.resolve("node-" + (node + 1) + ".log");
        processes[node] = ChildJvm.start(log, jvmFlags, Main.class, "--config", configs[node].toString());
        ChildJvm.awaitListening(processes[node], clientPorts[node], log, Duration.ofSeconds(90));
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
        com.fasterxml.jackson.databind.JsonNode[] digests = new com.fasterxml.jackson.databind.JsonNode[size];
        try {
            TestAwait.until("every node reporting the same digest of queue '" + queue + "'", timeout, () -> {
                for (int i = 0; i < size; i++) {
                    digests[i] = get(i, "/api/queues/" + queue + "/digest");
                    if (digests[i] == null || !digests[i].equals(digests[0])) {
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

    /** The JSON answer of node {@code node}'s admin API at {@code path}, or null if it does not answer 200. */
    com.fasterxml.jackson.databind.JsonNode get(int node, String path) {
        try {
            java.net.http.HttpResponse<String> response = java.net.http.HttpClient.newHttpClient().send(
                    java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + metricsPorts[node] + path))
                            .timeout(java.time.Duration.ofSeconds(5)).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            return response.statusCode() != 200 ? null : new com.fasterxml.jackson.databind.ObjectMapper().readTree(response.body());
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
