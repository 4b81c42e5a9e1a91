package io.sluice.broker;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;

/** Captures what one class logs while it is open (logback's list appender on that class's logger). */
public final class LogCapture implements AutoCloseable {
    private final Logger logger;
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

    private LogCapture(String loggerName) {
        logger = (Logger) LoggerFactory.getLogger(loggerName);
        appender.start();
        logger.addAppender(appender);
    }

    public static LogCapture of(Class<?> source) {
        return new LogCapture(source.getName());
    }

    /** The logger of a class this package cannot name (package-private elsewhere). */
    public static LogCapture of(String loggerName) {
        return new LogCapture(loggerName);
    }

    /** The events so far, copied (the appender list is written by other threads). */
    public List<ILoggingEvent> events() {
        synchronized (appender.list) {
            return new ArrayList<>(appender.list);
        }
    }

    /** Events at {@code level} or above whose message contains every fragment. */
    public long count(Level level, String... fragments) {
        return events().stream().filter(e -> e.getLevel().isGreaterOrEqual(level))
                .filter(e -> {
                    for (String f : fragments) {
                        if (!e.getFormattedMessage().contains(f)) {
                            return false;
                        }
                    }
                    return true;
                }).count();
    }

    @Override
    public void close() {
        logger.detachAppender(appender);
    }
}
