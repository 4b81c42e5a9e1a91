package io.sluice.broker;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.spi.ContextAwareBase;

/**
 * The broker's logging, configured in code rather than from an XML file: logback finds this class through
 * {@code META-INF/services/ch.qos.logback.classic.spi.Configurator} when the first logger is made. Parsing
 * an XML configuration cost a cold JVM about a tenth of a second of CPU and about 600 classes at every start
 * (docs/performance.md, "Restart after kill -9").
 *
 * <p>What it sets: one console appender (stdout, or stderr when the system property
 * {@code sluice.log.target} is {@code System.err}, as the offline tools set it so that their report alone
 * goes to stdout), lines as {@link #PATTERN}, level INFO, and WARN for Chronicle ({@code net.openhft};
 * ERROR for its affinity library, {@link #AFFINITY_LOGGER}), Netty and Ratis (Ratis logs every election and
 * segment roll at INFO; the cluster package says what an operator needs in its own words, docs/replication.md).
 *
 * <p>An operator's own file wins: with {@code -Dlogback.configurationFile=FILE}, or a {@code logback-test.xml}
 * on the classpath (the tests'), this configures nothing and logback reads that file as usual
 * (docs/operations.md, "Logging").
 */
public final class LogConfigurator extends ContextAwareBase implements Configurator {
    /** ISO-8601 time with the offset, level, thread, the logger's simple name and the message. */
    static final String PATTERN = "%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %-5level [%thread] %logger{0} - %msg%n";
    static final String TARGET_PROPERTY = "sluice.log.target";
    /**
     * Chronicle's thread-affinity library, which says at WARN on every start that it has no JNA: the build leaves JNA
     * out on purpose (the root pom: it cost the start a native library's extraction and a child process), and the
     * broker pins no threads.
     */
    static final String AFFINITY_LOGGER = "net.openhft.affinity.Affinity";
    private static final String CONFIGURATION_FILE_PROPERTY = "logback.configurationFile";
    private static final String TEST_FILE = "logback-test.xml";

    public LogConfigurator() {
    }

    @Override
    public ExecutionStatus configure(LoggerContext context) {
        if (System.getProperty(CONFIGURATION_FILE_PROPERTY) != null
                || LogConfigurator.class.getClassLoader().getResource(TEST_FILE) != null) {
            return ExecutionStatus.INVOKE_NEXT_IF_ANY;
        }
        apply(context);
        return ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY;
    }

    /** Sets up {@code context} as the class comment says; the console stream is the one current now. */
    static void apply(LoggerContext context) {
        PatternLayoutEncoder encoder = new PatternLayoutEncoder();
        encoder.setContext(context);
        encoder.setPattern(PATTERN);
        encoder.start();
        ConsoleAppender<ILoggingEvent> console = new ConsoleAppender<>();
        console.setContext(context);
        console.setName("STDOUT");
        console.setTarget("System.err".equals(System.getProperty(TARGET_PROPERTY)) ? "System.err" : "System.out");
        console.setEncoder(encoder);
        console.start();
        context.getLogger("net.openhft").setLevel(Level.WARN);
        context.getLogger(AFFINITY_LOGGER).setLevel(Level.ERROR);
        context.getLogger("io.netty").setLevel(Level.WARN);
        context.getLogger("org.apache.ratis").setLevel(Level.WARN);
        Logger root = context.getLogger(Logger.ROOT_LOGGER_NAME);
        root.setLevel(Level.INFO);
        root.addAppender(console);
    }
}
