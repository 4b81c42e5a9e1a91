package io.sluice.broker;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.Configurator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The logging set up in code says what the former logback.xml said: the line format, stdout (stderr for the
 * offline tools), INFO, WARN for Chronicle (ERROR for its affinity library, which says at every start that it has no
 * JNA), Netty and Ratis; and a logback file of the operator's (here the
 * tests' logback-test.xml) is left to logback.
 */
class LogConfiguratorTest {
    private final PrintStream stdout = System.out;
    private final PrintStream stderr = System.err;

    @AfterEach
    void restoreStreams() {
        System.setOut(stdout);
        System.setErr(stderr);
        System.clearProperty(LogConfigurator.TARGET_PROPERTY);
    }

    @Test
    void shouldWriteTheBrokersLineFormatToStdoutAtInfo() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        LoggerContext context = context();
        LogConfigurator.apply(context);
        Logger broker = context.getLogger("io.sluice.broker.Broker");
        broker.info("Sluice broker 'a' listening.");
        broker.debug("not shown");
        context.getLogger("net.openhft.chronicle.queue.X").info("not shown either");
        context.getLogger("io.netty.channel.Y").info("nor this");
        context.getLogger("org.apache.ratis.server.Z").info("nor this");
        context.getLogger("org.apache.ratis.server.Z").warn("but this");
        context.getLogger(LogConfigurator.AFFINITY_LOGGER).warn("Linux JNA-based affinity not usable due to JNA not being available!");
        context.getLogger(LogConfigurator.AFFINITY_LOGGER).error("and this");
        context.stop();
        String[] lines = out.toString(StandardCharsets.UTF_8).split("\n");
        assertEquals(3, lines.length, out.toString(StandardCharsets.UTF_8));
        assertTrue(lines[0].matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}(Z|[+-]\\d\\d:\\d\\d) INFO  \\[" + Thread.currentThread().getName()
                + "] Broker - Sluice broker 'a' listening\\."), lines[0]);
        assertTrue(lines[1].endsWith(" WARN  [" + Thread.currentThread().getName() + "] Z - but this"), lines[1]);
        assertTrue(lines[2].endsWith(" ERROR [" + Thread.currentThread().getName() + "] Affinity - and this"), lines[2]);
    }

    @Test
    void shouldWriteToStderrForTheOfflineTools() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        System.setProperty(LogConfigurator.TARGET_PROPERTY, "System.err");
        LoggerContext context = context();
        LogConfigurator.apply(context);
        context.getLogger("io.sluice.storage.tool.StorageTool").info("checking");
        context.stop();
        assertEquals("", out.toString(StandardCharsets.UTF_8));
        assertTrue(err.toString(StandardCharsets.UTF_8).endsWith(" StorageTool - checking\n"), err.toString(StandardCharsets.UTF_8));
    }

    /** A context as logback's SLF4J provider makes one: it needs its MDC adapter to log. */
    private static LoggerContext context() {
        LoggerContext context = new LoggerContext();
        context.setMDCAdapter(new ch.qos.logback.classic.util.LogbackMDCAdapter());
        return context;
    }

    @Test
    void shouldLeaveALogbackFileToLogback() {
        LoggerContext context = new LoggerContext();
        LogConfigurator configurator = new LogConfigurator();
        configurator.setContext(context);
        // The test classpath has logback-test.xml, as an operator's -Dlogback.configurationFile names a file.
        assertEquals(Configurator.ExecutionStatus.INVOKE_NEXT_IF_ANY, configurator.configure(context));
        assertFalse(context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).iteratorForAppenders().hasNext(), "no appender added");
    }
}
