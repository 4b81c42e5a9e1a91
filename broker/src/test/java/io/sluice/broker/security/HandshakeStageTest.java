package io.sluice.broker.security;

import io.netty.channel.Channel;
import io.sluice.broker.Broker;
import io.sluice.broker.TestAwait;
import io.sluice.broker.net.ClientSessionAdapter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * The handshake is a stage of its own: until HELLO_OK a connection's pipeline ends in the handshake
 * handler, after it in the session adapter alone; the connection counts follow the connection
 * across the change and come back when it closes, before or after the handshake.
 */
class HandshakeStageTest {
    @TempDir
    Path dir;

    @Test
    void theHandshakeHandlerLeavesThePipelineAtHelloOkAndTheCountsFollow() throws Exception {
        try (Broker broker = SecurityFixture.start(dir, null, Map.of())) {
            try (SocketPeer silent = new SocketPeer(broker.port())) {
                Channel ch = awaitOneConnection(broker);
                TestAwait.until("the handshake handler in the pipeline", () -> hasHandshake(ch)); // the channel joins the group before its pipeline is built
                assertNull(ch.pipeline().get(ClientSessionAdapter.class));
                assertEquals(1, broker.limits().openConnections());
            }
            TestAwait.until("no connection counted", () -> broker.limits().openConnections() == 0);

            try (SocketPeer open = SocketPeer.hello(broker.port())) {
                Channel ch = awaitOneConnection(broker);
                TestAwait.until("the session adapter in the pipeline", () -> ch.pipeline().get(ClientSessionAdapter.class) != null);
                assertFalse(hasHandshake(ch), ch.pipeline().names().toString());
                assertNotNull(ch.pipeline().get(ClientSessionAdapter.class));
                assertEquals(1, broker.limits().openConnections());
            }
            TestAwait.until("no connection counted", () -> broker.limits().openConnections() == 0);
        }
    }

    private static boolean hasHandshake(Channel ch) {
        return ch.pipeline().toMap().values().stream().anyMatch(h -> h.getClass().getSimpleName().equals("HandshakeHandler"));
    }

    private static Channel awaitOneConnection(Broker broker) throws InterruptedException {
        TestAwait.until("one connection", () -> broker.connections().size() == 1);
        return broker.connections().iterator().next();
    }
}
