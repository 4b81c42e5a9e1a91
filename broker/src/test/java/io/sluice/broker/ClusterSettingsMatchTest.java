package io.sluice.broker;

import io.sluice.broker.config.ConfigLoader;
import io.sluice.client.Connection;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R2 of docs/replication.md, "Settings that must match across nodes": a message's id is its slot in its segment, so
 * a node whose {@code storage.segment-bytes} differs from the others' gives later messages other ids, and acks by id then
 * name other messages there. Two nodes of 1 MiB segments form the cluster, which records its settings; a third started
 * with 2 MiB segments must stop before it applies anything with them (role HALTED, the reason naming the key, its value
 * there and the cluster's), must refuse to start again so configured, and with the cluster's value catches up. Nothing
 * checked it before: the third node applied every entry and held the 1,500 messages under other ids from the second
 * segment on.
 */
@Tag("cluster")
@Timeout(180)
class ClusterSettingsMatchTest {
    private static final Map<String, String> OTHER_SEGMENTS = Map.of("storage.segment-bytes", Long.toString(2L << 20));
    private static final String DIFFERS = "storage.segment-bytes is 2097152 on this node and 1048576 in the cluster";

    @TempDir
    Path dir;
    private final List<Broker> running = new ArrayList<>();

    @AfterEach
    void stop() {
        for (Broker broker : running) {
            broker.close();
        }
    }

    @Test
    void aNodeWhoseSegmentBytesDifferFromTheClustersStopsRefusesToStartAndCatchesUpOnceSetAsTheCluster() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3, "", "", "  segment-bytes: 1048576\n  max-message-bytes: 65536\n");
        List<Broker> founders = cluster.startInProcess(2);
        running.addAll(founders);
        Broker leader = ClusterFixture.awaitLeader(founders);
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            c.declareQueue("q", QueueSettings.EMPTY);
            Producer producer = c.createProducer("q", ProducerOptions.DEFAULT);
            // 1 KiB each: the segments roll at 1 MiB on the two.
            ClusterFixture.publishNumbered(producer, 1_500, 1024, new long[1], java.util.concurrent.ConcurrentHashMap.newKeySet());
        }

        Broker third = Broker.start(new ConfigLoader().load(cluster.configs[2], OTHER_SEGMENTS));
        running.add(third);
        long committed = leader.cluster().commitIndex();
        TestAwait.until("node 3 stopping, or applying through " + committed, Duration.ofSeconds(60),
                () -> third.cluster().status().get("halted") != null || third.cluster().appliedIndex() >= committed);
        Map<String, Object> status = third.cluster().status();
        assertEquals("HALTED", status.get("role"), "node 3 with other segments: " + status + "; its digest "
                + cluster.get(2, "/api/queues/q/digest") + ", the leader's " + cluster.get(brokersIndex(founders, leader), "/api/queues/q/digest"));
        String reason = String.valueOf(status.get("halted"));
        assertTrue(reason.contains(DIFFERS) && reason.contains("start it again"), reason);
        assertEquals(null, cluster.get(2, "/api/queues/q/digest"), "it applied nothing of the queue with its own segments");
        third.close();
        running.remove(third);

        Exception refused = assertThrows(Exception.class, () -> running.add(Broker.start(
                new ConfigLoader().load(cluster.configs[2], OTHER_SEGMENTS))), "started again with its own segments");
        assertTrue(messages(refused).contains(DIFFERS), messages(refused));

        running.add(Broker.start(cluster.config(2)));
        assertEquals(1_500, cluster.awaitDigest("q", 1_500, Duration.ofSeconds(60)).get("messages").asLong(),
                "with the cluster's segments it holds the same messages under the same ids");
    }

    private static int brokersIndex(List<Broker> brokers, Broker broker) {
        return brokers.indexOf(broker);
    }

    private static String messages(Throwable failure) {
        StringBuilder all = new StringBuilder();
        for (Throwable e = failure; e != null; e = e.getCause()) {
            all.append(e).append(" / ");
        }
        return all.toString();
    }
}
