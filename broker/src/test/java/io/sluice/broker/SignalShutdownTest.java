package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A broker process stopped with SIGTERM (what {@code kill}, systemd and {@code docker stop} send)
 * shuts down through its hook: Chronicle Queue replaces the JVM's signal handlers, and without the
 * broker restoring them the process ignored SIGTERM altogether.
 */
@Tag("slow")
class SignalShutdownTest {
    @TempDir
    Path dir;

    @Test
    void shouldShutDownGracefullyOnSigterm() throws Exception {
        int port = TestPorts.free();
        Path log = dir.resolve("broker.log");
        Process broker = ChildJvm.start(log, Main.class, "--data-dir", dir.resolve("data").toString(),
                "--port", Integer.toString(port), "--set", "storage.reserved-disk-bytes=67108864", "--set", "metrics.port=0");
        try {
            ChildJvm.awaitListening(broker, port, log);
            try (Connection c = Connection.connect(ConnectionOptions.builder().port(port)
                    .reconnectPolicy(ReconnectPolicy.DISABLED).build())) {
                c.declareQueue("q", QueueSettings.EMPTY);
                Producer p = c.createProducer("q", ProducerOptions.DEFAULT);
                for (int i = 0; i < 10; i++) {
                    p.send(("m" + i).getBytes(StandardCharsets.UTF_8));
                }
            }
            broker.destroy(); // SIGTERM on Linux
            assertTrue(broker.waitFor(30, TimeUnit.SECONDS), "the broker stops on SIGTERM; its log:\n" + ChildJvm.tail(log));
            assertEquals(143, broker.exitValue(), "exit status of a process ended by SIGTERM");
            String output = String.join("\n", ChildJvm.lines(log));
            assertTrue(output.contains("Shut down cleanly"), "the shutdown hook ran:\n" + ChildJvm.tail(log));
            assertTrue(output.contains("sluice: stopped"), ChildJvm.tail(log));
        } finally {
            if (broker.isAlive()) {
                ChildJvm.kill(broker);
            }
        }
    }

    /**
     * A SIGTERM that comes while the broker starts (here once its store has recovered, while it builds the rest and
     * binds) is handled as one after the start: the start ends, the broker closes cleanly. The hook used to be
     * registered only after the start, so such a signal ended the process with the store open, and one that came
     * just as the hook was added made the start fail ("Shutdown in progress"; bin/sluice's test saw it).
     */
    @Test
    void shouldShutDownCleanlyOnASigtermDuringTheStart() throws Exception {
        int port = TestPorts.free();
        Path log = dir.resolve("broker.log");
        Process broker = ChildJvm.start(log, Main.class, "--data-dir", dir.resolve("data").toString(),
                "--port", Integer.toString(port), "--set", "storage.reserved-disk-bytes=67108864", "--set", "metrics.port=0");
        try {
            ChildJvm.awaitOutput(broker, log, "the store's recovery line", l -> l.contains("MessageStore - Store ") && l.contains(" recovered "));
            broker.destroy(); // SIGTERM on Linux, before the broker listens
            assertTrue(broker.waitFor(60, TimeUnit.SECONDS), "the broker stops on SIGTERM; its log:\n" + ChildJvm.tail(log));
            String output = String.join("\n", ChildJvm.lines(log));
            assertTrue(output.contains("Shut down cleanly"), "the broker started, then closed through its hook:\n" + ChildJvm.tail(log));
            assertTrue(output.contains("sluice: stopped"), ChildJvm.tail(log));
            assertEquals(143, broker.exitValue(), "exit status of a process ended by SIGTERM:\n" + ChildJvm.tail(log));
        } finally {
            if (broker.isAlive()) {
                ChildJvm.kill(broker);
            }
        }
    }
}
