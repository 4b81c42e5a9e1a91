package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A follower that stops answering without going away, as a process stopped with SIGSTOP (a GC pause, a frozen VM, a
 * disk that hangs) does: its TCP connections stay open, so the leader's appends to it are neither refused nor closed,
 * they time out, and Ratis sends again. Issue 20 names RATIS-1674, gRPC's retry buffers leaking into
 * OutOfDirectMemoryError on the leader in exactly this case; Ratis 3.3 disables gRPC's retry on the server channel
 * and bounds what the leader has outstanding to each follower ({@code raft.grpc.server.leader.outstanding.appends.max}
 * requests of at most the appender's buffer each). This test holds the leader to that bound from outside: every node
 * runs with a small heap and direct-memory limit, the stopped follower is sent more than twice the direct limit in
 * messages, and the two others must confirm all of it with no OutOfMemoryError on the leader; the leader's direct
 * buffers, sampled from its metrics while the follower is stopped, stay under the limit. Then the follower is resumed
 * and must catch up (by log, or by the leader's snapshot if the leader purged its log past it) to the same digest.
 *
 * <p>Tagged {@code cluster-loop} (one to six minutes on two cores): run by hand, as docs/replication.md says.
 */
@Tag("cluster")
class ClusterSlowFollowerTest {
    private static final String QUEUE = "slow-follower";
    private static final int MESSAGE_BYTES = 4096;
    private static final int MESSAGES = 40_000;
    private static final long DIRECT_LIMIT_BYTES = 64L << 20;
    private static final Pattern DIRECT_BUFFERS = Pattern.compile("^jvm_buffer_memory_used_bytes\\{id=\"direct\"[^}]*} (\\S+)$",
            Pattern.MULTILINE);

    @TempDir
    Path dir;
    private final Process[] nodes = new Process[3];

    @AfterEach
    void killAll() throws Exception {
        for (Process node : nodes) {
            if (node != null && node.isAlive()) {
                signal(node, "CONT"); // a stopped process dies of SIGKILL all the same; resumed, its log says where it was
            }
        }
        ChildJvm.killAll(nodes);
    }

    @Test
    @Tag("cluster-loop")
    @Timeout(900)
    void aStoppedFollowerCostsTheLeaderBoundedMemoryAndCatchesUpWhenResumed() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        List<String> memoryLimits = List.of("-Xmx256m", "-XX:MaxDirectMemorySize=" + DIRECT_LIMIT_BYTES);
        for (int i = 0; i < 3; i++) {
            cluster.startChild(i, nodes, memoryLimits);
        }
        long maxDirectWhileStopped;
        int leader;
        int stopped;
        try (Connection connection = Connection.connect(cluster.reconnectingOptions())) {
            connection.declareQueue(QUEUE, QueueSettings.EMPTY);
            leader = Integer.parseInt(connection.brokerName().substring("node-".length())) - 1;
            stopped = (leader + 1) % 3;
            signal(nodes[stopped], "STOP");
            System.out.printf("ClusterSlowFollowerTest: node %d leads; node %d stopped (SIGSTOP)%n", leader + 1, stopped + 1);

            AtomicLong maxDirect = new AtomicLong(-1);
            AtomicBoolean publishing = new AtomicBoolean(true);
            Thread sampler = new Thread(() -> {
                while (publishing.get()) {
                    long direct = directBuffers(cluster, leader);
                    maxDirect.accumulateAndGet(direct, Math::max);
                    try {
                        Thread.sleep(200); // a sampling period, not a synchronisation
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "direct-memory-sampler");
            sampler.start();
            try (Producer producer = connection.createProducer(QUEUE, ProducerOptions.DEFAULT)) {
                List<CompletableFuture<Void>> confirms = new ArrayList<>(MESSAGES);
                for (int i = 0; i < MESSAGES; i++) {
                    confirms.add(producer.sendAsync(payload(i)));
                }
                CompletableFuture.allOf(confirms.toArray(CompletableFuture[]::new)).get(600, TimeUnit.SECONDS);
            } finally {
                publishing.set(false);
                sampler.join(10_000);
            }
            maxDirectWhileStopped = maxDirect.get();
            // The follower really was away for all of it: the leader counts it behind by (nearly) everything published.
            com.fasterxml.jackson.databind.JsonNode status = cluster.get(leader, "/api/cluster");
            long stoppedLag = -1;
            for (com.fasterxml.jackson.databind.JsonNode follower : status.get("followers")) {
                if (follower.get("nodeId").asInt() == stopped + 1) {
                    stoppedLag = follower.get("lagEntries").asLong();
                }
            }
            System.out.printf("ClusterSlowFollowerTest: the leader counts node %d %d entries behind%n", stopped + 1, stoppedLag);
            assertTrue(stoppedLag > 0, "the stopped follower is behind: " + status);
            assertTrue(nodes[stopped].isAlive() && nodes[leader].isAlive(), "no node died");
        }
        long totalBytes = (long) MESSAGES * MESSAGE_BYTES;
        System.out.printf("ClusterSlowFollowerTest: %d messages (%d MiB) confirmed by two nodes with node %d stopped; the leader's "
                + "direct buffers peaked at %.1f MiB of its %d MiB limit%n", MESSAGES, totalBytes >> 20, stopped + 1,
                maxDirectWhileStopped / 1048576.0, DIRECT_LIMIT_BYTES >> 20);
        assertTrue(totalBytes > 2 * DIRECT_LIMIT_BYTES, "more was sent to the stopped follower than the leader could buffer");
        assertTrue(maxDirectWhileStopped >= 0, "the leader's metrics answered while the follower was stopped");
        assertTrue(maxDirectWhileStopped < DIRECT_LIMIT_BYTES, "the leader's direct buffers: " + maxDirectWhileStopped);
        for (int i = 0; i < 3; i++) {
            String log = String.join("\n", ChildJvm.lines(cluster.log(i)));
            assertTrue(!log.contains("OutOfMemoryError") && !log.contains("OutOfDirectMemoryError"),
                    "node " + (i + 1) + " ran out of memory:\n" + ChildJvm.tail(cluster.log(i)));
        }

        signal(nodes[stopped], "CONT");
        com.fasterxml.jackson.databind.JsonNode digest = cluster.awaitDigest(QUEUE, MESSAGES, Duration.ofSeconds(300));
        assertEquals(MESSAGES, digest.get("messages").asLong(), "every node, the resumed one included, holds every message: " + digest);
    }

    private static byte[] payload(int i) {
        return ByteBuffer.allocate(MESSAGE_BYTES).putInt(i).array();
    }

    /** The leader's direct buffers in bytes, from its Prometheus endpoint, or -1 if it did not answer. */
    private static long directBuffers(ClusterFixture cluster, int node) {
        String metrics = cluster.text(node, "/metrics");
        Matcher m = metrics == null ? null : DIRECT_BUFFERS.matcher(metrics);
        return m != null && m.find() ? (long) Double.parseDouble(m.group(1)) : -1;
    }

    private static void signal(Process process, String signal) throws IOException, InterruptedException {
        // bash's own kill: no procps needed on a trimmed machine.
        Process kill = new ProcessBuilder("bash", "-c", "kill -" + signal + " " + process.pid()).inheritIO().start();
        assertEquals(0, kill.waitFor(), "kill -" + signal + " " + process.pid());
    }
}
