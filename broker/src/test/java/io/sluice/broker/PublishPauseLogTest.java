package io.sluice.broker;

import ch.qos.logback.classic.Level;
import io.sluice.broker.log.RateLimitedLog;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.HelloOkFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A client that crosses its publish window makes the broker pause reading it and say so (rule H2); a client can cross
 * it as often as it likes, so those lines are rate-limited across every connection (RateLimitedLog rule L1) rather than
 * one per pause: a client that sent one message too many per round wrote a WARN each round.
 */
@Timeout(120)
class PublishPauseLogTest {
    private static final int WINDOW_MESSAGES = 10;
    private static final int ROUNDS = 3 * RateLimitedLog.LINES_PER_INTERVAL;

    @TempDir
    Path dir;

    @Test
    void aClientCrossingItsWindowRoundAfterRoundWritesABoundedNumberOfLines() throws Exception {
        try (LogCapture log = LogCapture.of("io.sluice.broker.net.ClientSessionAdapter");
             Broker broker = TestBrokers.start(dir, Map.of("broker.publish-window-messages", String.valueOf(WINDOW_MESSAGES),
                     "storage.durability", "never"));
             RawClient raw = new RawClient(broker.port())) {
            broker.queues().declare("q", QueueSettings.EMPTY);
            raw.send(new HelloFrame(1, 1, "over\\running", 0, 0, "", "", HelloFrame.KNOWN_CAPABILITIES));
            raw.expect(HelloOkFrame.class);
            long sequence = 0;
            for (int round = 0; round < ROUNDS; round++) {
                PublishFrameBuilder frame = new PublishFrameBuilder(raw.alloc(), "q");
                for (int i = 0; i <= WINDOW_MESSAGES; i++) { // one beyond the window
                    frame.add(7, ++sequence, java.util.List.of(), new byte[] {1});
                }
                long creditAfter = sequence;
                raw.send(frame.build());
                // The window is given back as the messages are confirmed, which resumes reading for the next round.
                TestAwait.until("round " + round + "'s messages given back", () -> raw.publishCredit.get() >= creditAfter);
            }
            assertEquals(sequence, broker.queues().get("q").store().unackedMessages(), "every message stored once");
            long lines = log.count(Level.WARN, "beyond its publish window");
            assertTrue(lines >= 1, "the first pauses are still logged: " + log.events());
            assertTrue(lines <= RateLimitedLog.LINES_PER_INTERVAL, lines + " lines for " + ROUNDS + " pauses");
            // The client's name escaped once (its backslash doubled), as in every other line: not once more by the limiter.
            assertEquals(lines, log.count(Level.WARN, "beyond its publish window", "(client 'over\\\\running')"), log.events().toString());
        }
    }
}
