package io.sluice.broker;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.ProducerInitFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A string on the wire holds up to 65,535 bytes, and so does the sentence of an ERROR. Refusals that quote what the
 * client sent (an unknown setting key, a queue name that names no queue) were longer than that for a long enough
 * quote: building the ERROR threw on the event loop, the client got INTERNAL_ERROR and lost its connection, and the
 * broker logged its own failure with a stack trace at ERROR. Each is a client mistake: it must get its own code, the
 * connection must stay usable, and the log must hold no ERROR.
 */
@Timeout(60)
class LongStringsInRefusalsTest {
    @TempDir
    Path dir;
    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
    private final Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);

    @BeforeEach
    void capture() {
        logs.start();
        root.addAppender(logs);
    }

    @AfterEach
    void release() {
        root.detachAppender(logs);
    }

    private static String longString(char c, int length) {
        return String.valueOf(c).repeat(length);
    }

    private static void assertRefused(RawClient raw, long requestId, ErrorCode code, String quoted) throws InterruptedException {
        ErrorFrame error = raw.expect(ErrorFrame.class);
        assertEquals(code, error.errorCode(), error.message());
        assertEquals(requestId, error.requestId(), error.message());
        assertTrue(error.message().contains(quoted), error.message().substring(0, Math.min(300, error.message().length())));
    }

    @Test
    void refusalsQuotingLongClientStringsKeepTheirCodeAndTheConnection() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient raw = RawClient.connected(broker.port())) {
            String key = longString('k', 65_500);
            raw.send(new DeclareQueueFrame(1, "q", QueueSettings.builder().set(key, 1L).build()));
            assertRefused(raw, 1, ErrorCode.INVALID_QUEUE_SETTING, "unknown queue setting 'kkkk");

            String name = longString('n', 65_535);
            raw.send(new SubscribeFrame(2, 1, name, 10));
            assertRefused(raw, 2, ErrorCode.UNKNOWN_QUEUE, "queue 'nnnn");

            raw.send(new ProducerInitFrame(3, name, "p", -1));
            assertRefused(raw, 3, ErrorCode.UNKNOWN_QUEUE, "queue 'nnnn");

            raw.send(new DeclareQueueFrame(4, "q", QueueSettings.EMPTY));
            assertEquals(4, raw.expect(OkFrame.class).requestId(), "the connection is still usable");
            assertTrue(raw.isOpen());
        }
        List<String> errors = logs.list.stream().filter(e -> e.getLevel().isGreaterOrEqual(Level.ERROR))
                .map(ILoggingEvent::getFormattedMessage).collect(Collectors.toList());
        assertEquals(List.of(), errors, "a client's mistake is not the broker's ERROR");
    }
}
