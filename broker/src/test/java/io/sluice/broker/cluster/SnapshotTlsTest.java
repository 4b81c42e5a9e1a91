package io.sluice.broker.cluster;

import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.EventLoopGroup;
import io.sluice.broker.TestPorts;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.broker.queue.QueueManager;
import io.sluice.broker.security.CertificatesCli;
import io.sluice.broker.security.TestCertificates;
import io.sluice.storage.MessageStore;
import org.apache.ratis.server.protocol.TermIndex;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The snapshot port with {@code cluster.tls} (docs/security.md, "Between the nodes"): a follower presenting a
 * certificate of the cluster's CA installs the snapshot; one fetching in plain HTTP, or presenting a certificate of
 * another CA, gets no snapshot (no TLS session), though it holds the cluster secret, and nothing is installed.
 */
class SnapshotTlsTest {
    private static final TermIndex AT = TermIndex.valueOf(3, 41);
    private static final byte[] SECRET = "the cluster's shared secret, 32+ bytes long".getBytes(StandardCharsets.UTF_8);
    private static final SnapshotInstaller.Timeouts TIMEOUTS = new SnapshotInstaller.Timeouts(10_000, 30_000);

    @TempDir
    Path dir;
    private final EventLoopGroup loop = new DefaultEventLoopGroup(1);
    private final BrokerConfig config = new ConfigLoader().load(null, Map.of());
    private SnapshotServer server;

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
        loop.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private static BrokerConfig.ClusterTls tls(Path[] leaf, Path ca) {
        BrokerConfig.ClusterTls tls = new BrokerConfig.ClusterTls();
        tls.enabled = true;
        tls.certificate = leaf[0].toString();
        tls.privateKey = leaf[1].toString();
        tls.ca = ca.toString();
        return tls;
    }

    @Test
    void onlyAFollowerWithACertificateOfTheClustersCaFetchesTheSnapshot() throws Exception {
        TestCertificates certificates = new TestCertificates(Files.createDirectories(dir.resolve("pki")));
        Path ca = certificates.ca("cluster-ca");
        Path[] node = certificates.leaf("cluster-ca", "node", "sluice-node", "IP:127.0.0.1", 30, null);
        Path otherCa = certificates.ca("other-ca");
        Path[] rogue = certificates.leaf("other-ca", "rogue", "sluice-node", "IP:127.0.0.1", 30, null);

        int port = TestPorts.free();
        server = new SnapshotServer("127.0.0.1", port, SnapshotAuthTest.payrollSnapshot(dir.resolve("leader"), loop, config, AT),
                SnapshotAuth.withSecret(SECRET), NodeTls.of(tls(node, ca)).serverContext());
        String address = "127.0.0.1:" + port;

        Path follower = Files.createDirectories(dir.resolve("follower"));
        MessageStore store = MessageStore.open(follower, config.storeConfig());
        QueueManager queues = new QueueManager(store, loop, config.queues, 1000);
        try {
            SnapshotInstaller plain = new SnapshotInstaller(follower, queues, TIMEOUTS, SnapshotAuth.withSecret(SECRET));
            assertThrows(ExecutionException.class, () -> plain.fetch(address, AT.getIndex()).get(60, TimeUnit.SECONDS),
                    "plain HTTP to the TLS port");
            plain.close();

            // Another CA's certificate, even trusting the cluster's CA and holding the secret: no TLS session.
            SnapshotInstaller stranger = new SnapshotInstaller(follower, queues, TIMEOUTS, SnapshotAuth.withSecret(SECRET),
                    NodeTls.of(tls(rogue, ca)).clientContext());
            assertThrows(ExecutionException.class, () -> stranger.fetch(address, AT.getIndex()).get(60, TimeUnit.SECONDS),
                    "a certificate of another CA");
            stranger.close();
            // A follower that does not trust the server's CA refuses it too (a node impersonated).
            SnapshotInstaller distrustful = new SnapshotInstaller(follower, queues, TIMEOUTS, SnapshotAuth.withSecret(SECRET),
                    NodeTls.of(tls(rogue, otherCa)).clientContext());
            assertThrows(ExecutionException.class, () -> distrustful.fetch(address, AT.getIndex()).get(60, TimeUnit.SECONDS),
                    "a server of another CA");
            distrustful.close();
            assertFalse(Files.exists(follower.resolve(SnapshotInstaller.INSTALL)));
            assertFalse(Files.exists(follower.resolve(SnapshotInstaller.INSTALL + ".tmp")));

            SnapshotInstaller member = new SnapshotInstaller(follower, queues, TIMEOUTS, SnapshotAuth.withSecret(SECRET),
                    NodeTls.of(tls(node, ca)).clientContext());
            assertEquals(AT, member.fetch(address, AT.getIndex()).get(60, TimeUnit.SECONDS));
            assertEquals(AT, member.pending());
            member.close();
        } finally {
            queues.close();
            store.close();
        }
    }

    @Test
    void theCertificatesOfSluiceCertsServeTheClustersTls() throws Exception {
        Path certs = dir.resolve("certs");
        assertEquals(1, certs("node", certs.toString(), "node-9", "127.0.0.1"), "no CA yet: refused, saying so");
        assertEquals(0, certs("ca", certs.toString()));
        assertEquals(0, certs("node", certs.toString(), "node-1", "127.0.0.1,localhost"));
        assertEquals(0, certs("node", certs.toString(), "node-2", "127.0.0.1"));
        assertEquals(1, certs("node", certs.toString(), "../escape", "127.0.0.1"), "a name that is no file name");
        assertEquals(2, certs("node", certs.toString(), "node-3"), "no host");
        for (String privateFile : new String[] {"ca.p12", "ca.password", "node-1.key", "node-2.key"}) {
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(certs.resolve(privateFile))), privateFile);
        }
        assertFalse(Files.exists(certs.resolve("node-1.p12")), "the node's store, with a password nobody keeps, is gone");

        int port = TestPorts.free();
        server = new SnapshotServer("127.0.0.1", port, SnapshotAuthTest.payrollSnapshot(dir.resolve("leader"), loop, config, AT),
                SnapshotAuth.withSecret(SECRET), NodeTls.of(tls(made(certs, "node-1"), certs.resolve("ca.pem"))).serverContext());
        String address = "127.0.0.1:" + port;
        Path follower = Files.createDirectories(dir.resolve("follower"));
        MessageStore store = MessageStore.open(follower, config.storeConfig());
        QueueManager queues = new QueueManager(store, loop, config.queues, 1000);
        try {
            SnapshotInstaller member = new SnapshotInstaller(follower, queues, TIMEOUTS, SnapshotAuth.withSecret(SECRET),
                    NodeTls.of(tls(made(certs, "node-2"), certs.resolve("ca.pem"))).clientContext());
            assertEquals(AT, member.fetch(address, AT.getIndex()).get(60, TimeUnit.SECONDS));
            member.close();
        } finally {
            queues.close();
            store.close();
        }
    }

    private static int certs(String... args) {
        return CertificatesCli.run(args, System.out, System.err);
    }

    private static Path[] made(Path certs, String node) {
        return new Path[] {certs.resolve(node + ".pem"), certs.resolve(node + ".key")};
    }
}
