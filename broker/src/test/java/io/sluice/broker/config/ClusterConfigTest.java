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
        assertFalse(c.storeConfig().exactRollPoint(), "a broker of its own skips the count of its write segment at open");
        assertEquals(30_000, c.cluster.snapshotReadTimeoutMs);
        assertEquals(10_000, c.cluster.snapshotConnectTimeoutMs);
    }

    @Test
    void shouldReadTheNodeListFromAFile() throws Exception {
        Path file = dir.resolve("node-2.yaml");
        Files.writeString(file, "broker:\n  port: 9872\ncluster:\n  enabled: true\n  node-id: 2\n" + NODES);
        BrokerConfig c = new ConfigLoader().load(file, Map.of());
        assertTrue(c.cluster.enabled);
        assertTrue(c.storeConfig().exactRollPoint(), "a cluster node seals its segments where the others do (rule R6)");
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

    private static final String SERVING_NODES = "  nodes:\n"
            + "    - {id: 1, host: 127.0.0.1, raft-port: 9861, client-port: 9871, snapshot-port: 9881}\n"
            + "    - {id: 2, host: 127.0.0.1, raft-port: 9862, client-port: 9872, snapshot-port: 9882}\n";

    private String problems(String clusterKeys) throws Exception {
        Path file = dir.resolve("node.yaml");
        Files.writeString(file, "broker:\n  port: 9871\ncluster:\n  enabled: true\n  node-id: 1\n" + clusterKeys + SERVING_NODES);
        try {
            new ConfigLoader().load(file, Map.of());
            return null;
        } catch (ConfigException e) {
            return e.getMessage();
        }
    }

    @Test
    void shouldRefuseSnapshotPortsWithoutASecretUnlessAuthIsNoneKnowingly() throws Exception {
        String missing = problems("");
        assertTrue(missing != null && missing.contains("cluster.secret-file is empty, but the nodes serve snapshots (snapshot-port)")
                && missing.contains("cluster.snapshot-auth: none"), missing);
        assertEquals(null, problems("  snapshot-auth: none\n"), "none is accepted, knowingly");
        String unknown = problems("  snapshot-auth: maybe\n");
        assertTrue(unknown != null && unknown.contains("cluster.snapshot-auth 'maybe' is not one of secret, none"), unknown);

        Path secret = dir.resolve("secret");
        Files.writeString(secret, "short\n");
        java.nio.file.Files.setPosixFilePermissions(secret, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        String shortSecret = problems("  secret-file: " + secret + "\n");
        assertTrue(shortSecret != null && shortSecret.contains("holds 5 characters, fewer than 32") && shortSecret.contains("/dev/urandom"),
                shortSecret);
        Files.writeString(secret, "0123456789abcdef0123456789abcdef0123\n");
        assertEquals(null, problems("  secret-file: " + secret + "\n"));
        java.nio.file.Files.setPosixFilePermissions(secret, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        String readable = problems("  secret-file: " + secret + "\n");
        assertTrue(readable != null && readable.contains("may be read or changed by users other than its owner (mode rw-r--r--)")
                && readable.contains("chmod 600"), readable);
        java.nio.file.Files.setPosixFilePermissions(secret, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        Files.writeString(secret, "0123456789abcdef0123456789abcdef0123\n\nthe next secret, rotated in: 32+ characters\n");
        assertEquals(null, problems("  secret-file: " + secret + "\n"), "one secret per line, blank lines ignored (rotation)");
        Files.writeString(secret, "0123456789abcdef0123456789abcdef0123\nshort\n");
        String shortLine = problems("  secret-file: " + secret + "\n");
        assertTrue(shortLine != null && shortLine.contains("line 2 holds 5 characters, fewer than 32"), shortLine);
        String absent = problems("  secret-file: " + dir.resolve("nowhere") + "\n");
        assertTrue(absent != null && absent.contains("does not exist"), absent);
    }

    @Test
    void shouldRefuseTlsBetweenTheNodesWithoutItsThreeFiles() throws Exception {
        String none = problems("  snapshot-auth: none\n  tls:\n    enabled: true\n");
        assertTrue(none != null && none.contains("cluster.tls.enabled is true but cluster.tls.certificate is empty")
                && none.contains("cluster.tls.private-key is empty") && none.contains("cluster.tls.ca is empty"), none);
        Path pem = Files.writeString(dir.resolve("node.pem"), "not checked here\n");
        String absent = problems("  snapshot-auth: none\n  tls:\n    enabled: true\n    certificate: " + pem + "\n    private-key: " + pem
                + "\n    ca: " + dir.resolve("nowhere.pem") + "\n");
        assertTrue(absent != null && absent.contains("cluster.tls.ca " + dir.resolve("nowhere.pem") + " does not exist or cannot be read")
                && !absent.contains("cluster.tls.certificate"), absent);
        assertEquals(null, problems("  snapshot-auth: none\n  tls:\n    enabled: false\n"), "off needs no file");
    }
}
