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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A broker process stopped with SIGTERM (what {@code kill}, systemd and {@code docker stop} send)
 * shuts down cleanly: Chronicle Queue replaces the JVM's signal handlers, and without the
 * broker restoring them the process ignored SIGTERM altogether. It then exits with status 0, as its help says
 * ("0 stopped cleanly"): it exited with 143, the JVM's status for a SIGTERM, which systemd counts as a failure of the
 * service (unless told otherwise with SuccessExitStatus=143) and a container runtime shows as an error. SIGINT (Ctrl-C)
 * keeps the shell's 130, after the same clean stop.
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
            String output = String.join("\n", ChildJvm.lines(log));
            assertTrue(output.contains("Shut down cleanly"), "the broker closed:\n" + ChildJvm.tail(log));
            assertTrue(output.contains("sluice: stopped"), ChildJvm.tail(log));
            assertEquals(0, broker.exitValue(), "a clean stop on SIGTERM exits with 0:\n" + ChildJvm.tail(log));
        } finally {
            if (broker.isAlive()) {
                ChildJvm.kill(broker);
            }
        }
    }

    @Test
    void shouldShutDownCleanlyOnSigintWithTheShellsStatus() throws Exception {
        int port = TestPorts.free();
        Path log = dir.resolve("broker.log");
        Process broker = ChildJvm.start(log, Main.class, "--data-dir", dir.resolve("data").toString(),
                "--port", Integer.toString(port), "--set", "storage.reserved-disk-bytes=67108864", "--set", "metrics.port=0");
        try {
            ChildJvm.awaitListening(broker, port, log);
            Process kill = new ProcessBuilder("kill", "-INT", Long.toString(broker.pid())).inheritIO().start();
            assertEquals(0, kill.waitFor(), "kill -INT");
            assertTrue(broker.waitFor(30, TimeUnit.SECONDS), "the broker stops on SIGINT; its log:\n" + ChildJvm.tail(log));
            String output = String.join("\n", ChildJvm.lines(log));
            assertTrue(output.contains("Shut down cleanly"), "the broker closed:\n" + ChildJvm.tail(log));
            assertEquals(130, broker.exitValue(), "Ctrl-C's status, 128 + 2:\n" + ChildJvm.tail(log));
        } finally {
            if (broker.isAlive()) {
                ChildJvm.kill(broker);
            }
        }
    }

    /**
     * A SIGTERM that comes before the broker starts, while the configuration is read or Chronicle's signal set-up is
     * awaited, ends the process as one after the start does, with "sluice: stopped" and status 0, having started nothing
     * and written nothing (the data directory is never made). It met the JVM's own handler there, or Chronicle's chain
     * before the stop was set, and the process exited with 143. The start is held at the point by {@link PausedStartMain}
     * until the stop has said it began, then let go: the start must then give way to the stop.
     */
    @ParameterizedTest
    @EnumSource(Main.StartupPoint.class)
    void shouldExitWithZeroOnASigtermBeforeTheBrokerStarts(Main.StartupPoint point) throws Exception {
        int port = TestPorts.free();
        Path log = dir.resolve("broker.log");
        Path data = dir.resolve("data");
        Process broker = ChildJvm.start(log, PausedStartMain.class, point.name(), "--data-dir", data.toString(),
                "--port", Integer.toString(port), "--set", "storage.reserved-disk-bytes=67108864", "--set", "metrics.port=0");
        try {
            ChildJvm.awaitOutput(broker, log, "the start held at " + point, l -> l.equals(PausedStartMain.PAUSED + point));
            // SIGTERM on Linux; not Process.destroy(), which also closes the child's standard input, and so lets the start go on.
            broker.toHandle().destroy();
            ChildJvm.awaitOutput(broker, log, "the stop's first line", l -> l.equals("sluice: stopping (signal received)"));
            broker.getOutputStream().write('\n');
            broker.getOutputStream().flush(); // lets the start go on
            assertTrue(broker.waitFor(60, TimeUnit.SECONDS), "the broker stops on SIGTERM; its log:\n" + ChildJvm.tail(log));
            List<String> output = ChildJvm.lines(log);
            assertEquals(0, broker.exitValue(), "a clean stop on SIGTERM exits with 0:\n" + ChildJvm.tail(log));
            assertTrue(output.contains("sluice: stopped"), ChildJvm.tail(log));
            assertFalse(Files.exists(data), "nothing started, nothing written:\n" + ChildJvm.tail(log));
            assertFalse(output.stream().anyMatch(l -> l.contains("MessageStore")), "the store never opened:\n" + ChildJvm.tail(log));
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
            assertEquals(0, broker.exitValue(), "a clean stop on SIGTERM exits with 0:\n" + ChildJvm.tail(log));
        } finally {
            if (broker.isAlive()) {
                ChildJvm.kill(broker);
            }
        }
    }
}
