package io.sluice.broker.cluster;

import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.EventLoopGroup;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.broker.queue.QueueManager;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueDigest;
import io.sluice.storage.QueueStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A snapshot fetch from a leader that stops sending without closing the connection (a partition in the middle
 * of a transfer, rule R4 of docs/replication.md) gives up after {@code cluster.snapshot-read-timeout-ms}: the
 * fetch fails naming the peer and the timeout, the partial temporary directory is gone, the node's queues are
 * as they were, and the next fetch (the leader's next notification) starts afresh. A fake server on a real
 * socket sends the headers, or the headers and the beginning of a valid stream, and then stalls.
 */
class SnapshotFetchTimeoutTest {
    private static final int READ_TIMEOUT_MS = 1000;

    @TempDir
    Path dir;
    private final EventLoopGroup loop = new DefaultEventLoopGroup(1);
    private final BrokerConfig config = new ConfigLoader().load(null, Map.of());
    private final List<Socket> stalled = new ArrayList<>();

    @AfterEach
    void stop() throws IOException {
        for (Socket socket : stalled) {
            socket.close();
        }
        loop.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
    }

    @Test
    @Timeout(60)
    void shouldGiveUpOnAServerThatStallsInTheMiddleOfTheStreamAndLeaveTheOldState() throws Exception {
        byte[] beginning = beginningOfAStream();
        assertFetchTimesOut(beginning);
    }

    @Test
    @Timeout(60)
    void shouldGiveUpOnAServerThatStallsAfterTheHeaders() throws Exception {
        assertFetchTimesOut(new byte[0]);
    }

    /**
     * A server whose accept queue is full (it never accepts; Linux then drops further SYNs) stands for a leader
     * that does not answer a connection: the fetch gives up after the connect timeout, naming its key.
     */
    @Test
    @Timeout(60)
    void shouldGiveUpConnectingToAServerThatAcceptsNothing() throws Exception {
        Path data = dir.resolve("connecting");
        MessageStore store = MessageStore.open(data, config.storeConfig());
        QueueManager queues = new QueueManager(store, loop, config.queues, 1000);
        try (ServerSocket full = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            String address = "127.0.0.1:" + full.getLocalPort();
            for (int i = 0; i < 3; i++) {
                Socket filler = new Socket();
                stalled.add(filler);
                try {
                    filler.connect(full.getLocalSocketAddress(), 500);
                } catch (IOException e) {
                    break; // the queue is full already
                }
            }
            SnapshotInstaller installer = new SnapshotInstaller(data, queues, new SnapshotInstaller.Timeouts(READ_TIMEOUT_MS, 60_000),
                    SnapshotAuth.none());
            long started = System.nanoTime();
            ExecutionException failed = assertThrows(ExecutionException.class, () -> installer.fetch(address, 42).get(30, TimeUnit.SECONDS));
            long tookMs = (System.nanoTime() - started) / 1_000_000;
            String message = failed.getCause().getMessage();
            assertTrue(message.contains(address) && message.contains("cluster.snapshot-connect-timeout-ms"), message);
            assertTrue(tookMs < 10_000, "gave up after " + tookMs + " ms, with a connect timeout of " + READ_TIMEOUT_MS + " ms");
            assertFalse(Files.exists(data.resolve(SnapshotInstaller.INSTALL + ".tmp")));
            installer.close();
        } finally {
            queues.close();
            store.close();
        }
    }

    private void assertFetchTimesOut(byte[] body) throws Exception {
        Path data = dir.resolve("follower");
        MessageStore store = MessageStore.open(data, config.storeConfig());
        QueueManager queues = new QueueManager(store, loop, config.queues, 1000);
        try (ServerSocket server = new ServerSocket(0)) {
            QueueStore orders = queues.declare("orders", QueueSettings.EMPTY).store();
            for (int i = 1; i <= 20; i++) {
                orders.append(9, i, ByteBuffer.allocate(0), ByteBuffer.wrap(("order " + i).getBytes(StandardCharsets.UTF_8)));
            }
            QueueDigest before = QueueDigest.of(orders);
            Thread stalling = new Thread(() -> serveAndStall(server, body), "stalling-snapshot-server");
            stalling.setDaemon(true);
            stalling.start();
            String address = "127.0.0.1:" + server.getLocalPort();

            SnapshotInstaller installer = new SnapshotInstaller(data, queues, new SnapshotInstaller.Timeouts(READ_TIMEOUT_MS, READ_TIMEOUT_MS),
                    SnapshotAuth.none());
            long started = System.nanoTime();
            ExecutionException failed = assertThrows(ExecutionException.class,
                    () -> installer.fetch(address, 42).get(30, TimeUnit.SECONDS));
            long tookMs = (System.nanoTime() - started) / 1_000_000;
            String message = failed.getCause().getMessage();
            assertTrue(message.contains(address) && message.contains(READ_TIMEOUT_MS + " ms")
                    && message.contains("cluster.snapshot-read-timeout-ms"), message);
            assertTrue(tookMs < 10_000, "gave up after " + tookMs + " ms, with a read timeout of " + READ_TIMEOUT_MS + " ms");
            assertFalse(Files.exists(data.resolve(SnapshotInstaller.INSTALL + ".tmp")), "the partial temporary directory is deleted");
            assertFalse(Files.exists(data.resolve(SnapshotInstaller.INSTALL)), "nothing is pending");
            assertEquals(before, QueueDigest.of(orders), "the node's queues are untouched");
            assertEquals(List.of("orders"), queues.all().stream().map(q -> q.name()).toList());

            // The next notification's fetch tries again (and, against the same stalling server, gives up again).
            assertThrows(ExecutionException.class, () -> installer.fetch(address, 42).get(30, TimeUnit.SECONDS));
            installer.close();
        } finally {
            queues.close();
            store.close();
        }
    }

    /** Accepts each connection, reads the request's headers, answers 200 and {@code body}, and never sends more. */
    private void serveAndStall(ServerSocket server, byte[] body) {
        try {
            while (true) {
                Socket socket = server.accept();
                synchronized (stalled) {
                    stalled.add(socket);
                }
                InputStream in = socket.getInputStream();
                int matched = 0;
                byte[] end = "\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
                while (matched < end.length) {
                    int b = in.read();
                    if (b < 0) {
                        break;
                    }
                    matched = b == end[matched] ? matched + 1 : (b == end[0] ? 1 : 0);
                }
                OutputStream out = socket.getOutputStream();
                out.write(("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " + (body.length + 100_000)
                        + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(body);
                out.flush();
            }
        } catch (IOException e) {
            // the server socket closed: the test is over
        }
    }

    /** The header of a snapshot stream through index 42 and half of its first file. */
    private static byte[] beginningOfAStream() throws IOException {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeInt(0x534C5331);
        out.writeLong(3);
        out.writeLong(42);
        out.writeUTF("queues/orders/segments/0000000000.seg");
        out.writeLong(4096);
        out.write(new byte[2048]);
        out.flush();
        return bytes.toByteArray();
    }
}
