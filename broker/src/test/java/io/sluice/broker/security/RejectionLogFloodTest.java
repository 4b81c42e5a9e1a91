package io.sluice.broker.security;

import ch.qos.logback.classic.Level;
import io.sluice.broker.Broker;
import io.sluice.broker.LogCapture;
import io.sluice.broker.log.RateLimitedLog;
import io.sluice.broker.net.ClientSessionAdapter;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.Frame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * 200 connections that send a malformed frame are each refused with MALFORMED_FRAME, but the
 * operator log gets at most the first lines of the interval, not one line per connection.
 */
class RejectionLogFloodTest {
    private static final byte[] NEGATIVE_LENGTH = {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x01, 0x00};
    @TempDir
    Path dir;

    @Test
    void shouldRateLimitTheLogLinesOfRejectedConnections() throws Exception {
        try (Broker broker = SecurityFixture.start(dir, null, Map.of());
             LogCapture log = LogCapture.of(ClientSessionAdapter.class)) {
            for (int i = 0; i < 200; i++) {
                try (SocketPeer peer = new SocketPeer(broker.port())) {
                    peer.sendRaw(NEGATIVE_LENGTH);
                    List<Frame> answer = peer.readUntilClosed(30_000);
                    CloseFrame close = (CloseFrame) answer.get(answer.size() - 1);
                    assertEquals(ErrorCode.MALFORMED_FRAME, close.errorCode(), "every connection is still told why");
                }
            }
            long lines = log.count(Level.INFO);
            assertTrue(lines <= 2 * (RateLimitedLog.LINES_PER_INTERVAL + 1),
                    lines + " log lines for 200 rejected connections");
            try (SocketPeer normal = SocketPeer.hello(broker.port())) {
                assertTrue(normal != null, "the broker still serves a well-behaved client");
            }
        }
    }
}
