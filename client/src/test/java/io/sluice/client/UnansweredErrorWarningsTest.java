package io.sluice.client;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An ERROR to no request (request id 0) is logged at WARN once, then at most once a minute with a count of those not
 * logged (LogThrottleTest holds the count). The broker sends one per refused TX_PUBLISH, which must not make a WARN
 * line each.
 */
class UnansweredErrorWarningsTest {
    private final FakeBroker broker = new FakeBroker();
    private final Logger connectionLog = (Logger) LoggerFactory.getLogger(Connection.class);
    private final ListAppender<ILoggingEvent> lines = new ListAppender<>();
    private Connection connection;

    @AfterEach
    void stop() {
        connectionLog.detachAppender(lines);
        if (connection != null) {
            connection.close();
        }
        broker.close();
    }

    @Test
    void manyErrorsToNoRequestMakeOneWarningPerErrorCode() {
        lines.start();
        connectionLog.addAppender(lines);
        connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .requestTimeout(Duration.ofSeconds(5)).build());
        for (int i = 0; i < 5; i++) {
            broker.send(new ErrorFrame(0, ErrorCode.UNKNOWN_TRANSACTION, "transaction 1 is committing; refused " + i));
        }
        // Another kind of error, within the minute: its own line, not hidden by the flood of the first kind.
        broker.send(new ErrorFrame(0, ErrorCode.ACCESS_DENIED, "not allowed"));
        broker.send(new ErrorFrame(0, ErrorCode.ACCESS_DENIED, "not allowed again"));
        connection.declareQueue("orders", QueueSettings.EMPTY); // answered after the ERRORs, on the same socket

        List<String> warnings;
        synchronized (lines) { // AppenderBase appends under this lock
            warnings = lines.list.stream().filter(e -> e.getLevel() == Level.WARN)
                    .map(ILoggingEvent::getFormattedMessage).filter(m -> m.contains("reported an error")).toList();
        }
        assertEquals(2, warnings.size(), warnings.toString());
        assertTrue(warnings.get(0).endsWith("refused 0"), warnings.get(0));
        assertTrue(warnings.get(1).endsWith("not allowed"), warnings.get(1));
    }
}
