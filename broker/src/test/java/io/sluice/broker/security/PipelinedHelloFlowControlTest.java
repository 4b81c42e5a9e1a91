package io.sluice.broker.security;

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.sluice.broker.Broker;
import io.sluice.broker.FrameBytes;
import io.sluice.broker.TestAwait;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.FlowFrame;
import io.sluice.protocol.HelloOkFrame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * Frames a client pipelines behind a HELLO whose password is checked off the event loop wait for the check, and are
 * then handled as if read after it: a pause one of them makes (here H2, a PUBLISH past the publish window on a queue
 * whose confirms wait) holds. Before, reading was switched back on after they were handled, whatever they had paused;
 * the gate still believed itself paused, so it never paused again, and the broker read and stored whatever the client
 * sent past its window.
 */
@Timeout(120)
class PipelinedHelloFlowControlTest {
    private static final int WINDOW_MESSAGES = 10;

    @TempDir
    Path dir;

    private static PublishFrame publish(long producer, long firstSequence, int count) {
        PublishFrameBuilder frame = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "orders.slow");
        for (int i = 0; i < count; i++) {
            frame.add(producer, firstSequence + i, List.of(), new byte[] {1});
        }
        return frame.build();
    }

    @Test
    void aPublishPastTheWindowPipelinedBehindAPasswordHelloPausesReading() throws Exception {
        try (Broker broker = SecurityFixture.start(dir, SecurityFixture.usersYaml(), Map.of(
                "broker.publish-window-messages", String.valueOf(WINDOW_MESSAGES), "storage.durability", "never"));
             SocketPeer admin = new SocketPeer(broker.port())) {
            admin.sendRaw(SecurityFixture.helloBytes("admin", "alice", "s3cret"));
            admin.expect(HelloOkFrame.class, 20_000);
            admin.send(new DeclareQueueFrame(1, "orders.slow", QueueSettings.builder().quotaMessages(1, 0).build()));
            admin.expect(OkFrame.class, 10_000);
            admin.sendRaw(FrameBytes.of(publish(5, 1, 1))); // a backlog of one: SLOWED, its confirms wait for acks
            admin.expect(FlowFrame.class, 10_000);

            try (SocketPeer producer = new SocketPeer(broker.port())) {
                ByteArrayOutputStream pipelined = new ByteArrayOutputStream();
                pipelined.write(SecurityFixture.helloBytes("producer", "alice", "s3cret"));
                pipelined.write(FrameBytes.of(publish(99, 1, WINDOW_MESSAGES + 1))); // one past the window
                producer.sendRaw(pipelined.toByteArray());
                producer.expect(HelloOkFrame.class, 20_000);

                Channel served = served(broker, producer);
                // Runs on the connection's event loop after the task that answered the HELLO and handled what it held.
                boolean reading = served.eventLoop().submit(() -> served.config().isAutoRead()).get(10, TimeUnit.SECONDS);
                assertFalse(reading, "reading stays paused for the publish past the window");
                var queue = broker.queues().get("orders.slow");
                TestAwait.until("the held PUBLISH stored", () -> queue.store().unackedMessages() == 1 + WINDOW_MESSAGES + 1);
            }
        }
    }

    private static Channel served(Broker broker, SocketPeer peer) {
        InetSocketAddress local = peer.localAddress();
        for (Channel ch : broker.connections()) {
            if (local.equals(ch.remoteAddress())) {
                return ch;
            }
        }
        assertNotNull(null, "no channel of the broker's is the connection from " + local);
        return null;
    }
}
