package io.sluice.broker.security;

import ch.qos.logback.classic.spi.ILoggingEvent;
import io.sluice.broker.Broker;
import io.sluice.broker.LogCapture;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.HelloOkFrame;
import io.sluice.protocol.ProducerInitFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Text a client chooses (its user and client name, a producer name) reaches the operator log; a control character in it
 * would let an unauthenticated client forge log lines (a line feed) or drive the operator's terminal (ESC). Every line is
 * checked: none holds a control character, and what the client sent is still recognisable, escaped.
 */
class LogInjectionTest {
    private static final byte[] NEGATIVE_LENGTH = {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x01, 0x00};
    @TempDir
    Path dir;

    @Test
    void aHelloUserWithAControlCharacterIsRefusedAndLoggedEscaped() throws Exception {
        try (Broker broker = SecurityFixture.start(dir, SecurityFixture.usersYaml(), Map.of());
             LogCapture log = LogCapture.of("io.sluice")) {
            for (String user : List.of("evil\nFORGED LINE", "evil\rFORGED", "evil\u001b[2J")) {
                try (SocketPeer peer = new SocketPeer(broker.port())) {
                    peer.sendRaw(SecurityFixture.helloBytes("c\nFORGED CLIENT", user, "x"));
                    List<Frame> answer = peer.readUntilClosed(10_000);
                    CloseFrame close = (CloseFrame) answer.get(answer.size() - 1);
                    assertEquals(ErrorCode.AUTHENTICATION_FAILED.code(), close.code());
                    assertTrue(close.reason().contains("the user name holds a control character (U+00"), close.reason());
                }
            }
            assertNoControlCharacters(log.events());
            assertTrue(log.count(ch.qos.logback.classic.Level.WARN, "Authentication failed", "control character") >= 3,
                    "each refusal is logged");
        }
    }

    @Test
    void aClientNameAndProducerNameWithControlCharactersAreLoggedEscaped() throws Exception {
        try (Broker broker = SecurityFixture.start(dir, SecurityFixture.usersYaml(), Map.of());
             LogCapture log = LogCapture.of("io.sluice");
             SocketPeer peer = new SocketPeer(broker.port())) {
            peer.send(new HelloFrame(1, 1, "cli\nFORGED\u001b[2J", 1 << 20, 0, "alice", "s3cret"));
            peer.expect(HelloOkFrame.class, 10_000);
            peer.send(new ProducerInitFrame(7, "other", "p\r\nFORGED", 0)); // alice may not publish on 'other'
            ErrorFrame denied = peer.expect(ErrorFrame.class, 10_000);
            assertEquals(ErrorCode.ACCESS_DENIED.code(), denied.code());
            peer.sendRaw(NEGATIVE_LENGTH);
            List<Frame> answer = peer.readUntilClosed(10_000);
            assertEquals(ErrorCode.MALFORMED_FRAME.code(), ((CloseFrame) answer.get(answer.size() - 1)).code());

            assertNoControlCharacters(log.events());
            assertEquals(1, log.count(ch.qos.logback.classic.Level.INFO, "Access denied", "client 'cli\\nFORGED\\u001B[2J'"));
            assertEquals(1, log.count(ch.qos.logback.classic.Level.INFO, "Closing the connection", "client 'cli\\nFORGED\\u001B[2J'"));
        }
    }

    private static void assertNoControlCharacters(List<ILoggingEvent> events) {
        assertFalse(events.isEmpty());
        for (ILoggingEvent e : events) {
            String line = e.getFormattedMessage();
            assertTrue(line.chars().noneMatch(Character::isISOControl), "a control character in the log line: " + line);
        }
    }
}
