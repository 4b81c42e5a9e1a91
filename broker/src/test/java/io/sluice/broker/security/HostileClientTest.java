package io.sluice.broker.security;

import io.sluice.broker.Broker;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.client.SluiceException;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.CreditFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.DeliverFrame;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Clients that stall, flood or lie: each is cut off with a clear error, and afterwards a normal client
 * still works and the broker's threads and file descriptors are back where they were.
 */
class HostileClientTest {
    @TempDir
    Path dir;
    private Broker broker;
    private int threadsBefore;
    private long fdsBefore;

    @BeforeEach
    void start() throws Exception {
        broker = SecurityFixture.start(dir, null, Map.of(
                "broker.handshake-timeout-ms", "500",
                "limits.max-connections", "20",
                "limits.max-connections-per-user", "15",
                "limits.max-queues", "3",
                "limits.max-consumers-per-connection", "2",
                "limits.max-unacked-per-connection", "10"));
        normalClientWorks("warmup");
        threadsBefore = threads();
        fdsBefore = fds();
    }

    @AfterEach
    void stop() throws Exception {
        try {
            normalClientWorks("warmup"); // a queue that exists: limits.max-queues holds for the test's own declares too
            long deadline = System.currentTimeMillis() + 5_000;
            while ((threads() > threadsBefore + 3 || fds() > fdsBefore + 5) && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
            }
            assertTrue(threads() <= threadsBefore + 3, "threads " + threads() + " vs " + threadsBefore + " before");
            assertTrue(fds() <= fdsBefore + 5, "fds " + fds() + " vs " + fdsBefore + " before");
        } finally {
            broker.close();
        }
    }

    private static int threads() {
        return ManagementFactory.getThreadMXBean().getThreadCount();
    }

    private static long fds() throws Exception {
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }

    private void normalClientWorks(String queue) throws Exception {
        try (Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .reconnectPolicy(ReconnectPolicy.DISABLED).build())) {
            if (broker.queues().get(queue) == null) {
                broker.queues().declare(queue, QueueSettings.EMPTY);
            }
            try (Producer p = c.createProducer(queue, ProducerOptions.DEFAULT)) {
                p.send(new byte[] {1});
            }
        }
    }

    private static ErrorFrame errorIn(List<Frame> frames, ErrorCode code) {
        for (Frame f : frames) {
            if (f instanceof ErrorFrame e && e.errorCode() == code) {
                return e;
            }
        }
        throw new AssertionError("no ERROR " + code + " in " + frames);
    }

    @Test
    void silentClientIsDroppedAfterTheHandshakeTimeout() throws Exception {
        try (SocketPeer peer = new SocketPeer(broker.port())) {
            long started = System.currentTimeMillis();
            List<Frame> frames = peer.readUntilClosed(5_000);
            assertTrue(System.currentTimeMillis() - started >= 400);
            assertTrue(errorIn(frames, ErrorCode.HANDSHAKE_REQUIRED).message().contains("broker.handshake-timeout-ms 500"));
        }
    }

    @Test
    void slowlorisIsDroppedAfterTheHandshakeTimeout() throws Exception {
        try (SocketPeer peer = new SocketPeer(broker.port())) {
            peer.sendRaw(new byte[] {0});
            ErrorFrame e = errorIn(peer.readUntilClosed(5_000), ErrorCode.HANDSHAKE_REQUIRED);
            assertTrue(e.message().contains("no HELLO within broker.handshake-timeout-ms"), e.message());
        }
    }

    @Test
    void oversizedFrameHeaderIsRefusedBeforeTheBody() throws Exception {
        try (SocketPeer peer = new SocketPeer(broker.port())) {
            peer.sendRaw(ByteBuffer.allocate(6).putInt(1 << 20).put((byte) 1).put((byte) 0).array());
            ErrorFrame e = errorIn(peer.readUntilClosed(5_000), ErrorCode.FRAME_TOO_LARGE);
            assertTrue(e.message().contains(String.valueOf(1 << 20)), e.message());
        }
        try (SocketPeer peer = SocketPeer.hello(broker.port())) {
            peer.sendRaw(ByteBuffer.allocate(6).putInt(Integer.MAX_VALUE).put((byte) 0x20).put((byte) 0).array());
            errorIn(peer.readUntilClosed(5_000), ErrorCode.FRAME_TOO_LARGE);
        }
    }

    @Test
    void connectionFloodPastTheLimitIsRefused() throws Exception {
        List<SocketPeer> peers = new ArrayList<>();
        try {
            for (int i = 0; i < 15; i++) {
                peers.add(SocketPeer.hello(broker.port()));
            }
            try (SocketPeer overUser = new SocketPeer(broker.port())) {
                overUser.send(new io.sluice.protocol.HelloFrame(1, 1, "flood", 0, 0, "", ""));
                ErrorFrame e = errorIn(overUser.readUntilClosed(5_000), ErrorCode.RESOURCE_LIMIT);
                assertTrue(e.message().contains("limits.max-connections-per-user 15"), e.message());
            }
            // Closed connections (the one refused above, those of earlier tests) leave the count on the
            // event loops, after the socket closes; one still counted would make the broker refuse a
            // peer below and the count never reach 20.
            long settled = System.nanoTime() + 5_000_000_000L;
            while (broker.limits().openConnections() != 15 && System.nanoTime() < settled) {
                Thread.onSpinWait();
            }
            assertEquals(15, broker.limits().openConnections(), "only the 15 peers of user 'hostile-test' are open");
            for (int i = 0; i < 5; i++) {
                peers.add(new SocketPeer(broker.port()));
            }
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (broker.limits().openConnections() < 20 && System.nanoTime() < deadline) {
                Thread.onSpinWait(); // the broker registers the connections on its event loops
            }
            assertEquals(20, broker.limits().openConnections(), "the broker counts 20 open connections");
            // The five peers above sent no HELLO, so the 500 ms handshake timeout drops them soon: the
            // over-limit attempts must come before that, hence a few rather than many.
            for (int i = 0; i < 3; i++) {
                try (SocketPeer over = new SocketPeer(broker.port())) {
                    List<Frame> frames = over.readUntilClosed(5_000);
                    assertTrue(errorIn(frames, ErrorCode.RESOURCE_LIMIT).message()
                            .contains("would exceed limits.max-connections 20"));
                    assertTrue(frames.stream().anyMatch(f -> f instanceof CloseFrame));
                }
            }
        } finally {
            for (SocketPeer p : peers) {
                p.close();
            }
        }
    }

    @Test
    void queueConsumerAndCreditLimits() throws Exception {
        try (SocketPeer peer = SocketPeer.hello(broker.port())) {
            peer.send(new DeclareQueueFrame(1, "q1", QueueSettings.EMPTY));
            peer.expect(OkFrame.class, 5_000);
            peer.send(new DeclareQueueFrame(2, "q2", QueueSettings.EMPTY));
            peer.expect(OkFrame.class, 5_000);
            peer.send(new DeclareQueueFrame(3, "q3", QueueSettings.EMPTY));
            ErrorFrame queues = peer.expect(ErrorFrame.class, 5_000);
            assertEquals(ErrorCode.RESOURCE_LIMIT, queues.errorCode());
            assertTrue(queues.message().contains("above limits.max-queues 3"), queues.message());

            peer.send(new SubscribeFrame(4, 1, "q1", 8));
            peer.expect(OkFrame.class, 5_000);
            peer.send(new CreditFrame(1, 5));
            ErrorFrame credit = peer.expect(ErrorFrame.class, 5_000);
            assertEquals(ErrorCode.RESOURCE_LIMIT, credit.errorCode());
            assertTrue(credit.message().contains("above limits.max-unacked-per-connection 10; granted 2"), credit.message());
            peer.send(new SubscribeFrame(5, 2, "q2", 0));
            peer.expect(OkFrame.class, 5_000);
            peer.send(new SubscribeFrame(6, 3, "q2", 0));
            ErrorFrame consumers = peer.expect(ErrorFrame.class, 5_000);
            assertTrue(consumers.message().contains("would exceed limits.max-consumers-per-connection 2"), consumers.message());
            peer.send(new DeclareQueueFrame(7, "q1", QueueSettings.EMPTY));
            peer.expect(OkFrame.class, 5_000);
        }
    }

    @Test
    void unackedMessagesPerConnectionAreCapped() throws Exception {
        broker.queues().declare("work", QueueSettings.EMPTY);
        fdsBefore = fds(); // the new queue's files are the store's, not a leak
        try (Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .reconnectPolicy(ReconnectPolicy.DISABLED).build())) {
            try (Producer p = c.createProducer("work", ProducerOptions.DEFAULT)) {
                for (int i = 0; i < 20; i++) {
                    p.send(new byte[] {(byte) i});
                }
            }
            Consumer consumer = c.subscribe("work", ConsumerOptions.DEFAULT.withCredit(50));
            for (int i = 0; i < 10; i++) {
                assertTrue(consumer.receive(Duration.ofSeconds(5)) != null, "message " + i);
            }
            assertNull(consumer.receive(Duration.ofMillis(500)), "no delivery beyond limits.max-unacked-per-connection");
        }
    }

    /** Issue 15, defect 4: only what the queue actually settled frees connection credit. */
    @Test
    void anAckOfIdsNeverDeliveredFreesNoCredit() throws Exception {
        broker.queues().declare("lies", QueueSettings.EMPTY);
        fdsBefore = fds();
        try (Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .reconnectPolicy(ReconnectPolicy.DISABLED).build());
             Producer p = c.createProducer("lies", ProducerOptions.DEFAULT)) {
            for (int i = 0; i < 30; i++) {
                p.send(new byte[] {(byte) i});
            }
        }
        try (SocketPeer peer = SocketPeer.hello(broker.port())) {
            peer.send(new SubscribeFrame(1, 1, "lies", 10));
            peer.expect(OkFrame.class, 5_000);
            int delivered = 0;
            while (delivered < 10) {
                DeliverFrame d = peer.expect(DeliverFrame.class, 5_000);
                delivered += d.messageCount();
                d.release();
            }
            assertEquals(10, delivered);
            long neverDelivered = 1L << 40;
            peer.send(new AckFrame(1, java.util.List.of(new IdRange(neverDelivered, neverDelivered + 99))));
            ErrorFrame unknown = peer.expect(ErrorFrame.class, 5_000);
            assertEquals(ErrorCode.UNKNOWN_MESSAGE_ID, unknown.errorCode());

            peer.send(new CreditFrame(1, 10));
            ErrorFrame credit = peer.expect(ErrorFrame.class, 5_000);
            assertEquals(ErrorCode.RESOURCE_LIMIT, credit.errorCode(), credit.message());
            assertTrue(credit.message().contains("above limits.max-unacked-per-connection 10; granted 0"), credit.message());
        }
    }
}
