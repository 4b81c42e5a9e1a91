package io.sluice.broker;

import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.HeartbeatFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The broker's side of heartbeats (docs/protocol.md): it writes a HEARTBEAT when it wrote nothing for an
 * interval, and closes with HEARTBEAT_TIMEOUT a connection that sent nothing for two.
 */
class HeartbeatTest {
    @Test
    void shouldSendHeartbeatsToAQuietClientAndCloseItOnceItStaysSilent(@TempDir Path dir) throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of("broker.heartbeat-interval-ms", "300"));
             RawClient client = RawClient.connected(broker.port())) {
            List<Object> received = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!received.contains("closed")) {
                Object frame = client.received.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (frame == null) {
                    throw new AssertionError("the silent connection was not closed in 20 s; received " + received);
                }
                received.add(frame);
            }
            assertTrue(received.get(0) instanceof HeartbeatFrame, "a heartbeat first, while the client is silent: " + received);
            ErrorFrame error = received.stream().filter(ErrorFrame.class::isInstance).map(ErrorFrame.class::cast).findFirst()
                    .orElseThrow(() -> new AssertionError("no ERROR before the close: " + received));
            assertEquals(ErrorCode.HEARTBEAT_TIMEOUT.code(), error.code());
            CloseFrame close = received.stream().filter(CloseFrame.class::isInstance).map(CloseFrame.class::cast).findFirst()
                    .orElseThrow(() -> new AssertionError("no CLOSE: " + received));
            assertEquals(ErrorCode.HEARTBEAT_TIMEOUT.code(), close.code());
        }
    }
}
