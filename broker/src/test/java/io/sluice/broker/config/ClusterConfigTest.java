package io.sluice.broker.config;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ClusterConfigTest {
    @TempDir
    Path dir;

    private static final String NODES = "  nodes:\n"
            + "    - {id: 1, host: 127.0.0.1, raft-port: 9861, client-port: 9871}\n"
            + "    - {id: 2, host: 127.0.0.1, raft-port: 9862, client-port: 9872}\n"
            + "    - {id: 3, host: 127.0.0.1, raft-port: 9863, client-port: 9873}\n";

    @Test
    void shouldBeASingleNodeByDefault() {
        BrokerConfig c = new ConfigLoader().load(null, Map.of());
        assertFalse(c.cluster.enabled);
        assertTrue(c.cluster.nodes.isEmpty());
        assertEquals(750, c.cluster.electionTimeoutMinMs);
        assertEquals(1500, c.cluster.electionTimeoutMaxMs);
        assertEquals(c.dataDirectory().resolve("raft"), c.raftDirectory());
        assertEquals(30_000, c.cluster.snapshotReadTimeoutMs);
        assertEquals(10_000, c.cluster.snapshotConnectTimeoutMs);
    }

    @Test
    void shouldReadTheNodeListFromAFile() throws Exception {
        Path file = dir.resolve("node-2.yaml");
        Files.writeString(file, "broker:\n  port: 9872\ncluster:\n  enabled: true\n  node-id: 2\n" + NODES);
        BrokerConfig c = new ConfigLoader().load(file, Map.of());
        assertTrue(c.cluster.enabled);
        assertEquals(3, c.cluster.nodes.size());
        assertEquals(9862, c.cluster.nodes.get(1).raftPort);
        assertEquals(9873, c.cluster.nodes.get(2).clientPort);
    }

    @Test
    void shouldReportEveryClusterProblemTogether() throws Exception {
        Path file = dir.resolve("bad.yaml");
        Files.writeString(file, "broker:\n  port: 7000\nqueues:\n  dedup-enabled: false\ncluster:\n  enabled: true\n  node-id: 2\n"
                + "  election-timeout-min-ms: 3000\n  snapshot-read-timeout-ms: 0\n  snapshot-connect-timeout-ms: 99\n" + NODES + "    - {id: 3, host: '', raft-port: 0, client-port: 9874}\n");
        ConfigException e = assertThrows(ConfigException.class, () -> new ConfigLoader().load(file, Map.of()));
        String message = e.getMessage();
        assertTrue(message.contains("cluster.election-timeout-max-ms 1500 must be above cluster.election-timeout-min-ms 3000"), message);
        assertTrue(message.contains("cluster.nodes[3].id 3 is used by another node too"), message);
        assertTrue(message.contains("cluster.nodes[3].host is empty"), message);
        assertTrue(message.contains("cluster.nodes[3].raft-port 0 is outside 1..65535"), message);
        assertTrue(message.contains("has client-port 9872, but this broker listens on broker.port 7000"), message);
        assertTrue(message.contains("cluster.enabled needs queues.dedup-enabled true"), message);
        assertTrue(message.contains("cluster.snapshot-read-timeout-ms 0 is outside 100..3600000"), message);
        assertTrue(message.contains("cluster.snapshot-connect-timeout-ms 99 is outside 100..600000"), message);
    }

    @Test
    void shouldNameAMissingNode() throws Exception {
        Path file = dir.resolve("lost.yaml");
        Files.writeString(file, "cluster:\n  enabled: true\n  node-id: 7\n" + NODES);
        ConfigException e = assertThrows(ConfigException.class, () -> new ConfigLoader().load(file, Map.of()));
        assertTrue(e.getMessage().contains("cluster.node-id 7 is not the id of any of cluster.nodes [1, 2, 3]"), e.getMessage());
    }
}
