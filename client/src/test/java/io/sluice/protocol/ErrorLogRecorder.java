package io.sluice.protocol;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;

import java.util.ArrayList;
import java.util.List;

/**
 * Keeps every ERROR log line of the test JVM, Netty's "LEAK:" reports among them, so tests can fail on
 * them instead of leaving them in a log nobody reads. Configured in {@code logback-test.xml}.
 */
public final class ErrorLogRecorder extends AppenderBase<ILoggingEvent> {
    private static final List<String> ERRORS = new ArrayList<>();

    @Override
    protected void append(ILoggingEvent event) {
        if (event.getLevel().isGreaterOrEqual(Level.ERROR)) {
            synchronized (ERRORS) {
                ERRORS.add(event.getFormattedMessage());
            }
        }
    }

    /** Returns and forgets the ERROR lines logged so far. */
    static List<String> drain() {
        synchronized (ERRORS) {
            List<String> copy = List.copyOf(ERRORS);
            ERRORS.clear();
            return copy;
        }
    }
}
