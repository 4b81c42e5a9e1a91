package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.QueueSettings;
import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R4 of docs/replication.md, "a crash leaves the old state or the new": a follower behind the leader's purged
 * log is killed while it installs the leader's snapshot, at named crash points ({@code sluice.crash-point}, a
 * {@link Runtime#halt} as kill -9): while the stream is being fetched (a partial {@code snapshot-install.tmp}), once
 * the fetched snapshot is renamed to {@code snapshot-install} and before the swap, and in the swap after its old
 * queues are deleted. Each time it is started again and must end with the leader's digest (rule R6) holding every
 * confirmed message, with no install directory left; at the end every confirmed message is consumed from the
 * leader exactly once. Three broker JVMs; one cycle per crash point on the same follower.
 */
@Tag("cluster-loop")
class ClusterSnapshotCrashTest {
    private static final String QUEUE = "installs";
    private static final int PAYLOAD_BYTES = 2000;
    private static final List<String> POINTS = List.of(System.getProperty("sluice.snapshot-crash.points",
            "snapshot-while-fetching,snapshot-fetched-before-swap,snapshot-old-queues-deleted").split(","));

    @TempDir
    Path dir;
    private final Process[] nodes = new Process[3];

    @AfterEach
    void killAll() throws InterruptedException {
        ChildJvm.killAll(nodes);
    }

    @Test
    @Timeout(600)
    void shouldEndWithTheLeadersQueuesWhateverPointOfAnInstallAFollowerWasKilledAt() throws Exception {
        ClusterFixture cluster = ClusterFixture.snapshotting(dir);
        cluster.startChildren(nodes);
        ConnectionOptions options = cluster.reconnectingOptions();
        Set<Long> confirmed = ConcurrentHashMap.newKeySet();
        long[] next = {0};
        try (Connection connection = Connection.connect(options)) {
            connection.declareQueue(QUEUE, QueueSettings.EMPTY);
            int leader = Integer.parseInt(connection.brokerName().substring("node-".length())) - 1;
            int behind = (leader + 1) % 3;
            Path data = dir.resolve("node-" + (behind + 1));
            Producer producer = connection.createProducer(QUEUE, ProducerOptions.DEFAULT);
            publish(producer, 200, next, confirmed);
            for (String point : POINTS) {
                cluster.awaitSameDigest(QUEUE, Duration.ofSeconds(120));
                long behindApplied = cluster.get(behind, "/api/cluster").get("appliedIndex").asLong();
                ChildJvm.kill(nodes[behind]);
                int round = 0;
                while (cluster.get(leader, "/api/cluster").get("logStartIndex").asLong() <= behindApplied + 1) {
                    assertTrue(round++ < 40, "the leader has not purged its log past index " + behindApplied + ": "
                            + cluster.get(leader, "/api/cluster"));
                    publish(producer, 300, next, confirmed);
                }

                // Started with the crash point armed: it halts (137) at the point, in the middle of the install.
                Path log = cluster.log(behind);
                nodes[behind] = ChildJvm.start(log, List.of("-Dsluice.crash-point=" + point), Main.class,
                        "--config", cluster.configs[behind].toString());
                assertTrue(nodes[behind].waitFor(120, TimeUnit.SECONDS), "node " + (behind + 1) + " reached " + point
                        + " within 120 s: " + ChildJvm.tail(log));
                assertEquals(137, nodes[behind].exitValue(), ChildJvm.tail(log));
                assertTrue(Files.readString(log).contains("sluice.crash-point " + point + " reached"), ChildJvm.tail(log));
                Path install = data.resolve("snapshot-install");
                if (point.equals("snapshot-while-fetching")) {
                    assertTrue(Files.isDirectory(data.resolve("snapshot-install.tmp")) && !Files.exists(install),
                            "a partial fetch, undecided");
                } else {
                    assertTrue(Files.isDirectory(install), "a decided install, not swapped in yet");
                    assertEquals(point.equals("snapshot-old-queues-deleted"), Files.exists(install.resolve("old-queues-deleted")));
                }

                cluster.startChild(behind, nodes);
                JsonNode digest = cluster.awaitSameDigest(QUEUE, Duration.ofSeconds(120));
                assertEquals(confirmed.size(), digest.get("messages").asLong(), "after " + point + ": every node's messages " + digest);
                assertFalse(Files.exists(install), "after " + point + ": the install directory is gone");
                assertFalse(Files.exists(data.resolve("snapshot-install.tmp")), "after " + point + ": no partial fetch is left");
                System.out.printf("ClusterSnapshotCrashTest: %s: node %d recovered, %d messages on every node%n", point, behind + 1,
                        confirmed.size());
            }
            producer.close();
            ClusterFixture.consumeEachOnce(connection, QUEUE, confirmed);
        }
    }

    private static void publish(Producer producer, int count, long[] next, Set<Long> confirmed) throws Exception {
        ClusterFixture.publishNumbered(producer, count, PAYLOAD_BYTES, next, confirmed);
    }
}
