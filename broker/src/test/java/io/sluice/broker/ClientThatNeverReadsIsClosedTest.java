package io.sluice.broker;

import io.netty.channel.Channel;
import io.sluice.broker.metrics.MetricsFixture;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * A consumer that stops reading its socket and sends nothing more: the broker stops reading it (rule H4), its
 * reader-idle timer fires after two heartbeat intervals and the broker "closes with HEARTBEAT_TIMEOUT"
 * (docs/protocol.md). It wrote ERROR and CLOSE behind the deliveries the client never reads and closed the channel
 * only once that write completed, which it never does: the connection stayed open for good, counted against
 * limits.max-connections, with its outbound buffer and its deliveries held. The connection must be closed, and its
 * messages must go to the next consumer.
 */
@Timeout(90)
class ClientThatNeverReadsIsClosedTest {
    private static final int MESSAGES = 64;

    @TempDir
    Path dir;

    /** Publishes {@link #MESSAGES} messages of 256 KiB to queue "q". */
    private static void publish(ConnectionOptions options) throws Exception {
        try (Connection c = Connection.connect(options); Producer p = c.createProducer("q", ProducerOptions.DEFAULT)) {
            for (int i = 0; i < MESSAGES; i++) {
                byte[] payload = new byte[256 << 10];
                java.nio.ByteBuffer.wrap(payload).putLong(i);
                p.send(payload);
            }
        }
    }

    /** Connects {@code s} as a consumer of "q" that never reads; returns its channel once the deliveries fill it. */
    private static Channel subscribeWithoutReading(Broker broker, Socket s) throws Exception {
        s.setReceiveBufferSize(4096);
        s.connect(new InetSocketAddress("127.0.0.1", broker.port()));
        OutputStream out = s.getOutputStream();
        out.write(FrameBytes.of(new HelloFrame(1, 1, "never-reads", 0, 0, "", "")));
        out.write(FrameBytes.of(new SubscribeFrame(1, 1, "q", MESSAGES)));
        out.flush();
        TestAwait.until("the client's connection is open", () -> broker.connections().size() == 1);
        Channel channel = broker.connections().iterator().next();
        TestAwait.until("the deliveries fill the connection's outbound buffer", () -> !channel.isWritable());
        return channel;
    }

    @Test
    void aConsumerThatNeitherReadsNorSendsIsClosedAfterTheHeartbeatTimeoutAndItsMessagesGoOn() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of("broker.heartbeat-interval-ms", "300"))) {
            broker.queues().declare("q", QueueSettings.EMPTY);
            ConnectionOptions options = ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                    .reconnectPolicy(ReconnectPolicy.DISABLED).build();
            publish(options);
            try (Socket s = new Socket()) {
                Channel channel = subscribeWithoutReading(broker, s);
                // Nothing more is read from or sent by the client: two heartbeat intervals later the broker gives up on it.
                TestAwait.until("the broker closes the connection of a client that sent nothing for two heartbeat intervals",
                        Duration.ofSeconds(20), () -> !channel.isActive());
                TestAwait.until("the closed connection leaves limits.max-connections", () -> broker.limits().openConnections() == 0);
            }
            try (Connection c = Connection.connect(options)) {
                Consumer consumer = c.subscribe("q", ConsumerOptions.DEFAULT);
                Set<Long> seen = new HashSet<>();
                for (int i = 0; i < MESSAGES; i++) {
                    Message m = consumer.receive(Duration.ofSeconds(10));
                    assertNotNull(m, "message " + i + " of " + MESSAGES);
                    seen.add(java.nio.ByteBuffer.wrap(m.payload()).getLong());
                    m.ack();
                }
                assertEquals(MESSAGES, seen.size());
            }
        }
    }

    /**
     * The same client closed by an administrator (DELETE /api/connections/{id}): the CLOSE saying so waits behind the
     * deliveries the client never reads, and the close waited for it: the connection stayed open (as did every client of
     * a cluster node that lost its leadership, closed together once every CLOSE NOT_LEADER was written). Every close
     * with a last frame now ends within a grace period ({@code LastFrame}). The heartbeat is long, so that it is not the
     * heartbeat timeout that closes the connection here.
     */
    @Test
    void aConsumerThatNeverReadsIsClosedByAnAdministratorsClose() throws Exception {
        try (MetricsFixture fixture = new MetricsFixture(dir, Map.of("broker.heartbeat-interval-ms", "600000"))) {
            Broker broker = fixture.broker;
            broker.queues().declare("q", QueueSettings.EMPTY);
            publish(ConnectionOptions.builder().host("127.0.0.1").port(broker.port()).reconnectPolicy(ReconnectPolicy.DISABLED).build());
            try (Socket s = new Socket()) {
                Channel channel = subscribeWithoutReading(broker, s);
                String id = channel.id().asShortText();
                assertEquals(200, fixture.request("DELETE", "/api/connections/" + id, null, null).statusCode());
                TestAwait.until("the administrator's close closes the connection of a client that does not read",
                        Duration.ofSeconds(20), () -> !channel.isActive());
                TestAwait.until("the closed connection leaves limits.max-connections", () -> broker.limits().openConnections() == 0);
            }
        }
    }
}
