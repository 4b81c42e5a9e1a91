package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The packaged broker serves its first client without loading JFR's event machinery: Netty's allocator declares
 * JFR events, and on a JVM with JFR the first buffer allocated loads their metadata on the event loop, which was
 * most of the time from listening to the first confirm after a restart. {@link Main#main} turns Netty's events off
 * unless the operator set {@code io.netty.jfr.enabled}; set to true, they come back (which also shows that this
 * test sees them when they are there).
 */
class NettyJfrEventsIT {
    private static final String NETTY_EVENT = " io.netty.buffer.AbstractAllocatorEvent ";
    private static final String JFR_METADATA = " jdk.jfr.internal.MetadataLoader ";

    @TempDir
    Path dir;

    @Test
    void shouldServeItsFirstPublishWithoutLoadingJfrEvents() throws Exception {
        List<String> loaded = classesLoadedServingOnePublish(dir.resolve("off"), List.of());
        assertFalse(loaded.stream().anyMatch(l -> l.contains(NETTY_EVENT) || l.contains(JFR_METADATA)),
                "no JFR event class loaded: " + loaded.stream().filter(l -> l.contains("jfr") || l.contains("Event ")).toList());
    }

    @Test
    void shouldLoadThemWhenTheOperatorAsksForNettysEvents() throws Exception {
        List<String> loaded = classesLoadedServingOnePublish(dir.resolve("on"), List.of("-Dio.netty.jfr.enabled=true"));
        assertTrue(loaded.stream().anyMatch(l -> l.contains(NETTY_EVENT)), "Netty's allocator events were loaded");
    }

    /** Starts the jar, publishes one message, stops it, and returns its class-load log. */
    private static List<String> classesLoadedServingOnePublish(Path dir, List<String> javaOptions) throws Exception {
        Files.createDirectories(dir);
        Path jar = Path.of(System.getProperty("sluice.test.brokerJar"));
        assertTrue(Files.isRegularFile(jar), "the packaged broker " + jar + " exists (run with mvn verify)");
        Path classLoads = dir.resolve("class-load.log");
        Path log = dir.resolve("broker.log");
        int port = TestPorts.free();
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xlog:class+load:file=" + classLoads));
        command.addAll(javaOptions);
        command.addAll(List.of("-jar", jar.toString(), "--data-dir", dir.resolve("data").toString(), "--port", Integer.toString(port),
                "--set", "storage.reserved-disk-bytes=67108864", "--set", "metrics.port=0"));
        Process broker = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            ChildJvm.awaitListening(broker, port, log);
            try (Connection c = Connection.connect(ConnectionOptions.builder().port(port).reconnectPolicy(ReconnectPolicy.DISABLED).build())) {
                c.declareQueue("q", QueueSettings.EMPTY);
                Producer p = c.createProducer("q", ProducerOptions.DEFAULT);
                p.send("m".getBytes(StandardCharsets.UTF_8));
            }
        } finally {
            broker.destroy();
            if (!broker.waitFor(30, TimeUnit.SECONDS)) {
                ChildJvm.kill(broker);
            }
        }
        assertEquals(0, broker.exitValue(), "a clean stop on SIGTERM:\n" + ChildJvm.tail(log));
        return Files.readAllLines(classLoads);
    }
}
