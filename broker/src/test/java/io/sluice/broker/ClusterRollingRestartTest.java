package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A rolling restart under load (docs/replication.md, "Tests"): three broker JVMs on 127.0.0.1; while a producer
 * publishes with confirms and a consumer receives and acks, each node in turn is stopped with SIGTERM (the
 * operator's stop: it must exit cleanly) and started again, waiting before each stop until every node holds what
 * was confirmed, as an operator's procedure would. The leader is among them, so clients move at least once.
 * Afterwards every confirmed message was received (0 lost), no message was stored twice (each payload came
 * under one message id only; a redelivery of the same id, whose ack a stopping leader had not replicated, is
 * at-least-once and allowed), every node reports the same digest, and every node's backlog drains to 0.
 */
@Tag("cluster")
@Tag("cluster-loop") // about three minutes on two cores: not in the default run (broker/pom.xml); run with -Dsluice.test.excludedGroups=none
class ClusterRollingRestartTest {
    private static final String QUEUE = "rolling";
    /** Confirms between two restarts, at least. */
    private static final int PER_RESTART = 5_000;
    private static final int MAX_MESSAGES = 200_000;

    @TempDir
    Path dir;
    private final Process[] nodes = new Process[3];

    @AfterEach
    void killAll() throws InterruptedException {
        ChildJvm.killAll(nodes);
    }

    @Test
    @Timeout(300)
    void shouldLoseNothingAndStoreNothingTwiceWhileEveryNodeIsRestartedInTurnUnderLoad() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        cluster.startChildren(nodes);
        ConnectionOptions options = ConnectionOptions.builder().bootstrap(cluster.bootstrap())
                .reconnectPolicy(new ReconnectPolicy(true, Duration.ofMillis(50), Duration.ofMillis(500), 2.0, 0.2))
                .connectTimeout(Duration.ofSeconds(30)).requestTimeout(Duration.ofSeconds(30)).build();
        Set<Long> confirmed = ConcurrentHashMap.newKeySet();
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        Map<Long, Set<Long>> idsByPayload = new ConcurrentHashMap<>();
        List<Integer> stopExitCodes = new CopyOnWriteArrayList<>();
        long sent = 0;
        try (Connection producing = Connection.connect(options); Connection consuming = Connection.connect(options)) {
            producing.declareQueue(QUEUE, QueueSettings.EMPTY);
            consuming.subscribe(QUEUE, ConsumerOptions.DEFAULT, m -> {
                idsByPayload.computeIfAbsent(Payloads.sequence(m.payload()), p -> ConcurrentHashMap.newKeySet()).add(m.id());
                m.ack();
            });
            Producer producer = producing.createProducer(QUEUE, ProducerOptions.DEFAULT);
            AtomicBoolean restartsDone = new AtomicBoolean();
            AtomicReference<Throwable> restartFailed = new AtomicReference<>();
            Thread restarter = new Thread(() -> {
                try {
                    for (int node = 0; node < 3; node++) {
                        int target = (node + 1) * PER_RESTART;
                        TestAwait.until("confirms to reach " + target, Duration.ofSeconds(60), () -> confirmed.size() >= target);
                        long stored = confirmed.size();
                        // Every node has applied what the leader had committed by now: the stop then leaves two
                        // copies of everything confirmed, as an operator's procedure waits for a node to catch up.
                        long committed = 0;
                        for (int i = 0; i < 3; i++) {
                            committed = Math.max(committed, index(cluster, i, "commitIndex"));
                        }
                        for (int i = 0; i < 3; i++) {
                            int n = i;
                            long through = committed;
                            TestAwait.value("node " + (n + 1) + " applying the log up to " + committed, Duration.ofSeconds(60),
                                    () -> index(cluster, n, "appliedIndex"), applied -> applied >= through);
                        }
                        Process stopping = nodes[node];
                        stopping.destroy(); // SIGTERM
                        assertTrue(stopping.waitFor(60, TimeUnit.SECONDS), "node " + (node + 1) + " stops on SIGTERM");
                        stopExitCodes.add(stopping.exitValue());
                        System.out.printf("ClusterRollingRestartTest: stopped node %d with %d confirmed (%d when the wait began)%n",
                                node + 1, confirmed.size(), stored);
                        cluster.startChild(node, nodes);
                    }
                } catch (Throwable t) {
                    restartFailed.set(t);
                } finally {
                    restartsDone.set(true);
                }
            }, "cluster-rolling-restarter");
            restarter.start();
            List<CompletableFuture<Void>> futures = new ArrayList<>();
            while ((!restartsDone.get() || sent < 4L * PER_RESTART) && sent < MAX_MESSAGES) {
                long payload = sent++;
                CompletableFuture<Void> f = producer.sendAsync(Payloads.of(payload));
                f.whenComplete((ok, failure) -> {
                    if (failure == null) {
                        confirmed.add(payload);
                    } else {
                        failures.add(failure);
                    }
                });
                futures.add(f);
            }
            restarter.join(TimeUnit.MINUTES.toMillis(4));
            if (restartFailed.get() != null) {
                throw new AssertionError("a restart failed", restartFailed.get());
            }
            CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(120, TimeUnit.SECONDS);
            producer.close();
            assertEquals(List.of(), failures, "every message is confirmed across the restarts");
            TestAwait.until("the consumer to have received every confirmed message", Duration.ofSeconds(120),
                    () -> idsByPayload.keySet().containsAll(confirmed));
            TestAwait.value("the queue on the leader empty (everything acked)", Duration.ofSeconds(120),
                    () -> consuming.declareQueue(QUEUE, QueueSettings.EMPTY), left -> left == 0);
        }
        assertEquals(List.of(0, 0, 0), stopExitCodes, "each node stopped cleanly on SIGTERM");
        Set<Long> missing = new HashSet<>(confirmed);
        missing.removeAll(idsByPayload.keySet());
        long storedTwice = idsByPayload.values().stream().mapToLong(ids -> ids.size() - 1).sum();
        System.out.printf("ClusterRollingRestartTest: 3 restarts; sent %d, confirmed %d, received %d payloads, stored twice %d, lost %d%n",
                sent, confirmed.size(), idsByPayload.size(), storedTwice, missing.size());
        assertEquals(Set.of(), missing, "confirmed messages lost");
        assertEquals(0, storedTwice, "messages stored more than once (received under two ids)");
        assertEquals(sent, confirmed.size());
        assertEquals(confirmed, idsByPayload.keySet(), "exactly the confirmed messages were received");
        assertEquals(0, cluster.awaitDigest(QUEUE, 0, Duration.ofSeconds(60)).get("messages").asLong(), "messages left on the nodes");
        for (int i = 0; i < 3; i++) {
            int node = i;
            TestAwait.value("node " + (node + 1) + "'s backlog of " + QUEUE, Duration.ofSeconds(60),
                    () -> cluster.backlog(node, QUEUE), left -> left == 0);
        }
    }

    /** {@code field} of node {@code node}'s {@code GET /api/cluster}, or -1 if it does not answer. */
    private static long index(ClusterFixture cluster, int node, String field) {
        com.fasterxml.jackson.databind.JsonNode status = cluster.get(node, "/api/cluster");
        return status == null || !status.has(field) ? -1 : status.get(field).asLong();
    }
}
