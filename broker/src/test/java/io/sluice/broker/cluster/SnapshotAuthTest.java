package io.sluice.broker.cluster;

import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.EventLoopGroup;
import io.sluice.broker.TestPorts;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.broker.queue.QueueManager;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import org.apache.ratis.server.protocol.TermIndex;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The snapshot port serves only a node that proves it holds the cluster secret (docs/security.md, "The snapshot
 * port"): a request without proof, with a made-up proof or with a proof of another secret gets 401 and a
 * sentence, and not a byte of a queue; a follower with the same secret installs the snapshot.
 */
class SnapshotAuthTest {
    private static final TermIndex AT = TermIndex.valueOf(2, 17);
    private static final byte[] SECRET = "the cluster's shared secret, 32+ bytes long".getBytes(StandardCharsets.UTF_8);
    private static final SnapshotInstaller.Timeouts TIMEOUTS = new SnapshotInstaller.Timeouts(10_000, 30_000);

    @TempDir
    Path dir;
    private final EventLoopGroup loop = new DefaultEventLoopGroup(1);
    private final BrokerConfig config = new ConfigLoader().load(null, Map.of());
    private SnapshotServer server;
    private String address;

    @BeforeEach
    void serveASnapshot() throws Exception {
        int port = TestPorts.free();
        server = new SnapshotServer("127.0.0.1", port, payrollSnapshot(dir.resolve("leader"), loop, config, AT), SnapshotAuth.withSecret(SECRET));
        address = "127.0.0.1:" + port;
    }

    /** A snapshot at {@code at} of a node in {@code data} holding queue "payroll" with 50 messages (salaries). */
    static ShardSnapshots payrollSnapshot(Path data, EventLoopGroup loop, BrokerConfig config, TermIndex at) throws Exception {
        MessageStore store = MessageStore.open(data, config.storeConfig());
        QueueManager queues = new QueueManager(store, loop, config.queues, 1000);
        try {
            QueueStore q = queues.declare("payroll", QueueSettings.EMPTY).store();
            for (int i = 1; i <= 50; i++) {
                q.append(9, i, ByteBuffer.allocate(0), ByteBuffer.wrap(("salary of employee " + i).getBytes(StandardCharsets.UTF_8)));
            }
            ShardSnapshots snapshots = new ShardSnapshots(data.resolve("snapshots"), queues);
            snapshots.take(at);
            return snapshots;
        } finally {
            queues.close();
            store.close();
        }
    }

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
        loop.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
    }

    @Test
    void shouldRefuseARequestWithoutProofAndSendNoByteOfAQueue() throws Exception {
        HttpURLConnection plain = open(null);
        assertEquals(401, plain.getResponseCode());
        String challenge = plain.getHeaderField("WWW-Authenticate");
        assertNotNull(challenge);
        assertTrue(challenge.startsWith("Sluice-HMAC-SHA256 nonce=\""), challenge);
        String body = readAll(plain.getErrorStream());
        assertTrue(body.contains("cluster secret") && body.contains("cluster.secret-file"), body);
        assertFalse(body.contains("salary"), "no message of the queue: " + body);

        // A made-up proof for the nonce just issued is refused too, and spends the nonce.
        String nonce = challenge.substring(challenge.indexOf('"') + 1, challenge.lastIndexOf('"'));
        HttpURLConnection guessed = open("Sluice-HMAC-SHA256 nonce=\"" + nonce + "\", proof=\"" + "0".repeat(64) + "\"");
        assertEquals(401, guessed.getResponseCode());
        assertFalse(readAll(guessed.getErrorStream()).contains("salary"));
    }

    @Test
    void shouldRefuseAFollowerWithAnotherSecretAndInstallForOneWithTheSame() throws Exception {
        Path follower = Files.createDirectories(dir.resolve("follower"));
        MessageStore store = MessageStore.open(follower, config.storeConfig());
        QueueManager queues = new QueueManager(store, loop, config.queues, 1000);
        try {
            SnapshotInstaller wrong = new SnapshotInstaller(follower, queues, TIMEOUTS,
                    SnapshotAuth.withSecret("another secret, not the cluster's one".getBytes(StandardCharsets.UTF_8)));
            ExecutionException refused = assertThrows(ExecutionException.class, () -> wrong.fetch(address, AT.getIndex()).get(60, TimeUnit.SECONDS));
            String message = refused.getCause().getMessage();
            assertTrue(message.contains(address) && message.contains("401") && message.contains("cluster.secret-file"), message);
            assertFalse(Files.exists(follower.resolve(SnapshotInstaller.INSTALL)));
            assertFalse(Files.exists(follower.resolve(SnapshotInstaller.INSTALL + ".tmp")));
            wrong.close();

            SnapshotInstaller none = new SnapshotInstaller(follower, queues, TIMEOUTS, SnapshotAuth.none());
            assertThrows(ExecutionException.class, () -> none.fetch(address, AT.getIndex()).get(60, TimeUnit.SECONDS),
                    "a follower without a secret is refused");
            none.close();

            SnapshotInstaller right = new SnapshotInstaller(follower, queues, TIMEOUTS, SnapshotAuth.withSecret(SECRET));
            assertEquals(AT, right.fetch(address, AT.getIndex()).get(60, TimeUnit.SECONDS));
            assertEquals(AT, right.pending());
            right.close();
        } finally {
            queues.close();
            store.close();
        }
    }

    @Test
    void shouldRotateTheClusterSecretWithoutARestartAcceptingEveryLineAndProvingWithTheFirst() throws Exception {
        String old = "the cluster's old secret, 32+ bytes long";
        String fresh = "the cluster's new secret, 32+ bytes long too";
        Path leaderSecret = secretFile("leader-secret", old);
        Path followerSecret = secretFile("follower-secret", old);
        server.close();
        int port = TestPorts.free();
        server = new SnapshotServer("127.0.0.1", port, payrollSnapshot(dir.resolve("rotating"), loop, config, AT),
                SnapshotAuth.fromFile(leaderSecret.toString()));
        address = "127.0.0.1:" + port;
        SnapshotAuth follower = SnapshotAuth.fromFile(followerSecret.toString());
        assertEquals(AT, fetchInto("before", follower), "both hold the old secret");

        // Step 1, on every node: the new secret is accepted too. Step 2: each proves with it.
        write(leaderSecret, old + "\n" + fresh + "\n");
        write(followerSecret, fresh + "\n" + old + "\n");
        assertEquals(AT, fetchInto("during", follower),
                "the follower proves the new secret, which the leader accepts from its file's second line, read again");

        // Step 3: the old secret is gone from the leader; a node still proving it is refused.
        write(leaderSecret, fresh + "\n");
        assertEquals(AT, fetchInto("after", follower));
        ExecutionException refused = assertThrows(ExecutionException.class,
                () -> fetchInto("stale", SnapshotAuth.withSecret(old.getBytes(StandardCharsets.UTF_8))));
        assertTrue(refused.getCause().getMessage().contains("401"), refused.getCause().getMessage());

        // A file made unusable meanwhile (a secret too short) is not taken: the last good secrets stay.
        write(leaderSecret, "short\n");
        assertEquals(AT, fetchInto("broken-file", follower));
    }

    /** Fetches the snapshot into a new follower directory {@code name}, proving with {@code auth}. */
    private TermIndex fetchInto(String name, SnapshotAuth auth) throws Exception {
        Path follower = Files.createDirectories(dir.resolve(name));
        MessageStore store = MessageStore.open(follower, config.storeConfig());
        QueueManager queues = new QueueManager(store, loop, config.queues, 1000);
        SnapshotInstaller installer = new SnapshotInstaller(follower, queues, TIMEOUTS, auth);
        try {
            return installer.fetch(address, AT.getIndex()).get(60, TimeUnit.SECONDS);
        } finally {
            installer.close();
            queues.close();
            store.close();
        }
    }

    private Path secretFile(String name, String secret) throws Exception {
        Path file = dir.resolve(name);
        write(file, secret + "\n");
        return file;
    }

    private static void write(Path file, String content) throws Exception {
        Path temporary = file.resolveSibling(file.getFileName() + ".tmp");
        Files.writeString(temporary, content);
        Files.setPosixFilePermissions(temporary, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        Files.move(temporary, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    private HttpURLConnection open(String authorization) throws Exception {
        HttpURLConnection connection = (HttpURLConnection) URI.create("http://" + address + "/snapshot?min-index=" + AT.getIndex())
                .toURL().openConnection();
        connection.setConnectTimeout(10_000);
        connection.setReadTimeout(30_000);
        if (authorization != null) {
            connection.setRequestProperty("Authorization", authorization);
        }
        return connection;
    }

    private static String readAll(InputStream in) throws Exception {
        if (in == null) {
            return "";
        }
        try (in) {
            return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
        }
    }
}
