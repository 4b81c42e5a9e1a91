package io.sluice.broker;

import com.fasterxml.jackson.databind.JsonNode;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R4 of docs/replication.md: a follower that was down while the leader snapshotted and purged its log past
 * the follower's last entry catches up by the leader's snapshot plus the log after it, and can then serve.
 * Three broker JVMs with a snapshot every 100 entries and small Raft log segments (so that a purge removes
 * whole segments soon). A follower is killed (kill -9); a producer publishes 1 KiB messages with confirms and a
 * consumer acks some, until the leader's log starts after the follower's applied index; the follower restarts,
 * installs the snapshot (its log says so) and replays the rest, and every node's digest agrees. Then the other
 * follower is killed, more messages are confirmed (by the leader and the caught-up follower, the majority), and
 * the leader is killed and the other follower restarted: the caught-up follower, holding the longer log, is
 * the one that can be elected, and serves; every confirmed, unacked message is consumed from it, exactly once.
 */
@Tag("cluster")
class ClusterSnapshotTest {
    private static final String QUEUE = "snapshots";
    private static final int PAYLOAD_BYTES = 1000;

    @TempDir
    Path dir;
    private final Process[] nodes = new Process[3];

    @AfterEach
    void killAll() throws InterruptedException {
        ChildJvm.killAll(nodes);
    }

    @Test
    @Timeout(420)
    void shouldCatchUpAFollowerBehindThePurgedLogBySnapshotAndLetItServe() throws Exception {
        ClusterFixture cluster = ClusterFixture.snapshotting(dir);
        cluster.startChildren(nodes);
        ConnectionOptions options = cluster.reconnectingOptions();
        Set<Long> confirmed = ConcurrentHashMap.newKeySet();
        Set<Long> acked = ConcurrentHashMap.newKeySet();
        long[] next = {0};
        int leader;
        int behind;
        int other;
        try (Connection connection = Connection.connect(options)) {
            connection.declareQueue(QUEUE, QueueSettings.EMPTY);
            leader = nodeNamed(connection.brokerName());
            behind = (leader + 1) % 3;
            other = (leader + 2) % 3;
            Producer producer = connection.createProducer(QUEUE, ProducerOptions.DEFAULT);
            publish(producer, 500, next, confirmed);
            awaitBacklogEverywhere(cluster, confirmed.size());
            long behindApplied = cluster.get(behind, "/api/cluster").get("appliedIndex").asLong();
            ChildJvm.kill(nodes[behind]);
            System.out.printf("ClusterSnapshotTest: killed follower node %d at applied index %d%n", behind + 1, behindApplied);

            // Publish 500 and ack 150 a round, until the leader's log no longer holds the entry after
            // the follower's last (bounded: at most 40 rounds of 500, 20 MB).
            int round = 0;
            while (cluster.get(leader, "/api/cluster").get("logStartIndex").asLong() <= behindApplied + 1) {
                assertTrue(round++ < 40, "the leader has not purged its log past index " + behindApplied + " after " + confirmed.size()
                        + " messages: " + cluster.get(leader, "/api/cluster"));
                publish(producer, 500, next, confirmed);
                consumeSome(connection, QUEUE, 150, acked);
            }
            System.out.printf("ClusterSnapshotTest: leader log starts at %s with %d confirmed, %d acked%n",
                    cluster.get(leader, "/api/cluster").get("logStartIndex"), confirmed.size(), acked.size());

            cluster.startChild(behind, nodes);
            JsonNode digest = cluster.awaitSameDigest(QUEUE, Duration.ofSeconds(120));
            assertEquals(confirmed.size() - acked.size(), digest.get("messages").asLong(), "every node's unacked messages: " + digest);
            String log = Files.readString(cluster.log(behind));
            log.lines().filter(line -> line.contains("snapshot") || line.contains("Snapshot"))
                    .forEach(line -> System.out.println("ClusterSnapshotTest: node " + (behind + 1) + ": " + line));
            assertTrue(log.contains("Snapshot install:") && log.contains("in place"), "node " + (behind + 1)
                    + " caught up by installing the leader's snapshot (its log)");

            // The caught-up follower is half of the majority from here on: what is confirmed now is in its log.
            ChildJvm.kill(nodes[other]);
            publish(producer, 300, next, confirmed);
            producer.close();
        }
        ChildJvm.kill(nodes[leader]);
        cluster.startChild(other, nodes);

        Set<Long> expected = new HashSet<>(confirmed);
        expected.removeAll(acked);
        try (Connection connection = Connection.connect(options)) {
            assertEquals(behind, nodeNamed(connection.brokerName()), "the caught-up follower, with the longer log, leads");
            ClusterFixture.consumeEachOnce(connection, QUEUE, expected);
        }
    }

    /** Publishes {@code count} 1 KiB messages carrying sequences from {@code next[0]} on, recording those confirmed. */
    static void publish(Producer producer, int count, long[] next, Set<Long> confirmed) throws Exception {
        ClusterFixture.publishNumbered(producer, count, PAYLOAD_BYTES, next, confirmed);
    }

    /** Subscribes, acks {@code count} messages (recording them once the ack is sent) and unsubscribes. */
    static void consumeSome(Connection connection, String queue, int count, Set<Long> acked) throws Exception {
        Set<Long> seen = ConcurrentHashMap.newKeySet();
        Consumer consumer = connection.subscribe(queue, ConsumerOptions.DEFAULT, m -> {
            long sequence = ByteBuffer.wrap(m.payload()).getLong();
            if (seen.size() < count && seen.add(sequence)) {
                m.ack();
                acked.add(sequence);
            }
        });
        TestAwait.until(count + " messages acked", Duration.ofSeconds(60), () -> seen.size() >= count);
        consumer.close();
    }

    private static void awaitBacklogEverywhere(ClusterFixture cluster, long messages) throws Exception {
        for (int i = 0; i < 3; i++) {
            int node = i;
            TestAwait.value("node " + (node + 1) + " holding " + messages + " messages", Duration.ofSeconds(60),
                    () -> cluster.backlog(node, QUEUE), held -> held == messages);
        }
    }

    private static int nodeNamed(String brokerName) {
        return Integer.parseInt(brokerName.substring("node-".length())) - 1;
    }
}
