package io.sluice.broker;

import io.sluice.broker.cluster.RogueRaftPeer;
import io.sluice.broker.security.TestCertificates;
import io.sluice.client.Connection;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.QueueSettings;
import org.apache.ratis.grpc.GrpcTlsConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Mutual TLS between the nodes ({@code cluster.tls}, docs/security.md, "Between the nodes"): a cluster whose nodes
 * hold certificates of the cluster's CA replicates as before, and a peer that is no node, submitting a well-formed
 * delete of a queue straight to the Raft ports, is refused whether it speaks plain gRPC or presents a certificate of
 * another CA; the queue keeps every message on every node. The same submission with a node's certificate is
 * committed (the control that shows the refusals come from TLS, not from the entry).
 */
@Tag("cluster")
@Timeout(180)
class ClusterTlsTest {
    @TempDir
    Path dir;
    private final List<Broker> brokers = new ArrayList<>();

    @AfterEach
    void stop() {
        for (Broker broker : brokers) {
            broker.close();
        }
    }

    @Test
    void onlyAPeerWithACertificateOfTheClustersCaReachesTheLog() throws Exception {
        Path pki = Files.createDirectories(dir.resolve("pki"));
        TestCertificates certificates = new TestCertificates(pki);
        Path ca = certificates.ca("cluster-ca");
        Path[] node = certificates.leaf("cluster-ca", "node", "sluice-node", "IP:127.0.0.1", 30, null);
        certificates.ca("other-ca");
        Path[] rogue = certificates.leaf("other-ca", "rogue", "sluice-node", "IP:127.0.0.1", 30, null);

        ClusterFixture cluster = new ClusterFixture(Files.createDirectories(dir.resolve("cluster")), 3, "  tls:\n"
                + "    enabled: true\n"
                + "    certificate: " + node[0] + "\n"
                + "    private-key: " + node[1] + "\n"
                + "    ca: " + ca + "\n");
        brokers.addAll(cluster.startInProcess());
        ClusterFixture.awaitLeader(brokers);
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            for (String queue : List.of("kept", "control")) {
                c.declareQueue(queue, QueueSettings.EMPTY);
                Producer producer = c.createProducer(queue, ProducerOptions.DEFAULT);
                ClusterFixture.publish(producer, 0, 300);
                producer.close();
            }
        }
        assertEquals(300, cluster.awaitDigest("kept", 300, Duration.ofSeconds(30)).get("messages").asLong());
        // Rule R12: the leader asks every node its entry level over Raft's channel, so over mutual TLS here.
        assertEquals(8, ClusterFixture.awaitLeader(brokers).cluster().raiseEntryLevel(8).get(30, java.util.concurrent.TimeUnit.SECONDS),
                "every node told the leader its entry level");

        List<String> raft = new ArrayList<>();
        for (int port : cluster.raftPorts) {
            raft.add("127.0.0.1:" + port);
        }
        assertFalse(RogueRaftPeer.deleteQueue(raft, "kept", null, 2_000), "plain gRPC reached the log");
        assertFalse(RogueRaftPeer.deleteQueue(raft, "kept", new GrpcTlsConfig(rogue[1].toFile(), rogue[0].toFile(), ca.toFile(), true),
                2_000), "a certificate of another CA reached the log");
        assertEquals(300, cluster.awaitDigest("kept", 300, Duration.ofSeconds(30)).get("messages").asLong(),
                "every node keeps the queue and its messages");

        // The control: the same entry with a certificate of the cluster's CA is committed and applied on every node.
        assertTrue(RogueRaftPeer.deleteQueue(raft, "control", new GrpcTlsConfig(node[1].toFile(), node[0].toFile(), ca.toFile(), true),
                10_000), "a node's certificate reaches the log");
        for (int i = 0; i < 3; i++) {
            int n = i;
            TestAwait.until("node " + (i + 1) + " applying the control's delete", Duration.ofSeconds(30),
                    () -> cluster.get(n, "/api/queues/control") == null);
        }
        assertEquals(300, cluster.awaitDigest("kept", 300, Duration.ofSeconds(30)).get("messages").asLong());
    }
}
