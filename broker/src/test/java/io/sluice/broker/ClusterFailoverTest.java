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
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Three broker JVMs on 127.0.0.1 (docs/replication.md). A producer publishes with confirms through a client
 * given the three as its bootstrap list; another thread kills the leader with kill -9 while publishes are
 * in flight. The client follows NOT_LEADER to the new leader and resends what was not confirmed. Then
 * everything is consumed: every confirmed message must be there (0 lost), and under one message id only
 * (0 stored twice). Prints the time from the kill to the first confirm after it.
 *
 * <p>The default run kills once. The loop ({@code @Tag("cluster-loop")}, excluded from the default run by
 * broker/pom.xml) kills the leader of the moment {@code -Dsluice.cluster-failover.kills} times (default 10),
 * restarting the killed node each time so a majority stays (docs/replication.md, "Tests").
 */
@Tag("cluster")
class ClusterFailoverTest {
    private static final String QUEUE = "failover";
    private static final int PER_KILL = 20_000;

    @TempDir
    Path dir;
    private final Process[] nodes = new Process[3];

    @AfterEach
    void killAll() throws InterruptedException {
        for (Process p : nodes) {
            if (p != null && p.isAlive()) {
                ChildJvm.kill(p);
            }
        }
    }

    @Test
    @Timeout(180)
    void shouldLoseNoConfirmedMessageAndStoreNoneTwiceWhenTheLeaderIsKilled() throws Exception {
        killLeaderRepeatedly(1);
    }

    @Test
    @Tag("cluster-loop")
    @Timeout(1800)
    void shouldLoseNoConfirmedMessageAndStoreNoneTwiceOverManyLeaderKills() throws Exception {
        killLeaderRepeatedly(Integer.getInteger("sluice.cluster-failover.kills", 10));
    }

    private void killLeaderRepeatedly(int kills) throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        System.arraycopy(cluster.startChildren(), 0, nodes, 0, 3);
        ConnectionOptions options = ConnectionOptions.builder().bootstrap(cluster.bootstrap())
                .reconnectPolicy(new ReconnectPolicy(true, Duration.ofMillis(50), Duration.ofMillis(500), 2.0, 0.2))
                .connectTimeout(Duration.ofSeconds(30)).requestTimeout(Duration.ofSeconds(30)).build();
        Set<Long> confirmed = ConcurrentHashMap.newKeySet();
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        List<Long> firstConfirmAfterKillMs = new ArrayList<>();
        Map<Long, Long> confirmedAtNanos = new ConcurrentHashMap<>();
        long sent = 0;
        try (Connection connection = Connection.connect(options)) {
            connection.declareQueue(QUEUE, QueueSettings.EMPTY);
            Producer producer = connection.createProducer(QUEUE, ProducerOptions.DEFAULT);
            for (int kill = 0; kill < kills; kill++) {
                int killAt = confirmed.size() + PER_KILL / 4;
                AtomicReference<Throwable> killFailed = new AtomicReference<>();
                long[] killedAtNanos = new long[2]; // the kill, and the moment the process was gone
                Thread killer = new Thread(() -> {
                    try {
                        TestAwait.until("confirms to reach " + killAt, Duration.ofSeconds(60), () -> confirmed.size() >= killAt);
                        // The failure a cluster of three survives is one node of three copies: a follower still
                        // catching up (a node restarted by the kill before) would leave one copy, so wait for it.
                        long stored = confirmed.size();
                        for (int i = 0; i < 3; i++) {
                            int node = i;
                            TestAwait.value("node " + (node + 1) + " holding the " + stored + " messages confirmed",
                                    Duration.ofSeconds(60), () -> cluster.backlog(node, QUEUE), held -> held >= stored);
                        }
                        int leader = nodeNamed(connection.brokerName());
                        killedAtNanos[0] = System.nanoTime();
                        ChildJvm.kill(nodes[leader]);
                        killedAtNanos[1] = System.nanoTime();
                        System.out.printf("ClusterFailoverTest: killed the leader, node %d, with %d confirmed%n", leader + 1,
                                confirmed.size());
                        // Back as a follower once the others confirm again: the restart's start-up (seconds of CPU on a
                        // two-core machine) must not be counted in the failover it follows. A majority stays either way.
                        long after = killedAtNanos[1] + TimeUnit.MILLISECONDS.toNanos(50);
                        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                        TestAwait.until("a confirm after the kill, or 30 s", Duration.ofSeconds(60),
                                () -> System.nanoTime() > deadline || confirmedAtNanos.values().stream().anyMatch(t -> t > after));
                        nodes[leader] = cluster.startChild(leader);
                    } catch (Throwable t) {
                        killFailed.set(t);
                    }
                }, "cluster-failover-killer");
                killer.start();
                List<CompletableFuture<Void>> futures = new ArrayList<>(PER_KILL);
                for (int i = 0; i < PER_KILL; i++) {
                    long payload = sent++;
                    CompletableFuture<Void> f = producer.sendAsync(Payloads.of(payload));
                    f.whenComplete((ok, failure) -> {
                        if (failure == null) {
                            confirmedAtNanos.put(payload, System.nanoTime());
                            confirmed.add(payload);
                        } else {
                            failures.add(failure);
                        }
                    });
                    futures.add(f);
                }
                killer.join(120_000);
                if (killFailed.get() != null) {
                    throw new AssertionError("killing or restarting the leader failed", killFailed.get());
                }
                CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(120, TimeUnit.SECONDS);
                assertEquals(List.of(), failures, "every message is confirmed after the failover");
                firstConfirmAfterKillMs.add(firstConfirmAfter(killedAtNanos[0], killedAtNanos[1], confirmedAtNanos));
            }
            producer.close();
        }
        Map<Long, Set<Long>> idsByPayload = consumeEverything(options);
        // Every node, the restarted ones included (which replayed their log), dropped every acked message: a copy
        // stored twice on one node, or under another id, would be left over there.
        for (int i = 0; i < 3; i++) {
            int node = i;
            TestAwait.value("node " + (node + 1) + "'s backlog of " + QUEUE, Duration.ofSeconds(60),
                    () -> cluster.backlog(node, QUEUE), left -> left == 0);
        }
        Set<Long> missing = new HashSet<>(confirmed);
        missing.removeAll(idsByPayload.keySet());
        long storedTwice = idsByPayload.values().stream().mapToLong(ids -> ids.size() - 1).sum();
        System.out.printf("ClusterFailoverTest: %d leader kills; sent %d, confirmed %d, consumed %d payloads, stored twice %d, "
                + "lost %d; first confirm after each kill (ms from kill -9): %s%n", kills, sent, confirmed.size(),
                idsByPayload.size(), storedTwice, missing.size(), firstConfirmAfterKillMs);
        assertEquals(Set.of(), missing, "confirmed messages lost");
        assertEquals(0, storedTwice, "messages stored more than once (consumed under two ids)");
        assertEquals(sent, confirmed.size());
        assertEquals(confirmed, idsByPayload.keySet(), "the queue holds exactly the confirmed messages");
        for (long ms : firstConfirmAfterKillMs) {
            assertTrue(ms >= 0 && ms < 30_000, "the first confirm after a kill came " + ms + " ms after it (-1: none came)");
        }
    }

    private static int nodeNamed(String brokerName) {
        return Integer.parseInt(brokerName.substring("node-".length())) - 1;
    }

    /**
     * Milliseconds from the kill to the first confirm that came more than 50 ms after the killed process was
     * gone: confirms the dead leader sent before it died are read within milliseconds of its end, so what is
     * left is the write unavailability the failover cost (election, reconnect, resend).
     */
    private static long firstConfirmAfter(long killedAtNanos, long goneAtNanos, Map<Long, Long> confirmedAtNanos) {
        long after = goneAtNanos + TimeUnit.MILLISECONDS.toNanos(50);
        return confirmedAtNanos.values().stream().filter(t -> t > after)
                .mapToLong(t -> TimeUnit.NANOSECONDS.toMillis(t - killedAtNanos)).min().orElse(-1);
    }

    /** Subscribes through the cluster and acks until the leader's queue is empty; every payload with the ids it came under. */
    private static Map<Long, Set<Long>> consumeEverything(ConnectionOptions options) throws Exception {
        Map<Long, Set<Long>> idsByPayload = new ConcurrentHashMap<>();
        try (Connection consuming = Connection.connect(options)) {
            consuming.subscribe(QUEUE, ConsumerOptions.DEFAULT, m -> {
                idsByPayload.computeIfAbsent(Payloads.sequence(m.payload()), p -> ConcurrentHashMap.newKeySet()).add(m.id());
                m.ack();
            });
            TestAwait.value("the queue on the leader empty (everything consumed and acked)", Duration.ofSeconds(120),
                    () -> consuming.declareQueue(QUEUE, QueueSettings.EMPTY), left -> left == 0);
        }
        return idsByPayload;
    }
}
