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
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The packaged broker, started as README says ({@code java -jar}, no JVM flags), stops through its shutdown
 * hook on SIGTERM, right after starting and seconds later, and keeps what it confirmed across the restart.
 * Run by failsafe once the jar and its {@code lib/} exist ({@link SignalShutdownTest} starts the broker with
 * {@code -cp} from the test classpath instead).
 *
 * <p>What this does not do: reproduce the first session's finding that Chronicle Queue's signal handlers made a
 * {@code java -jar} broker ignore SIGTERM. With {@code ChronicleSignals}' calls taken out of {@code Main}, both
 * tests still passed (2026-11-30), so that regression is guarded by nothing yet; the workaround stays.
 */
class BrokerJarSignalIT {
    @TempDir
    Path dir;

    @Test
    void shouldStopGracefullyOnSigtermRightAfterStartingAndKeepWhatItConfirmed() throws Exception {
        Path data = dir.resolve("data");
        Broker broker = startJar(data, dir.resolve("first.log"));
        try {
            publish(broker.port(), "q", 10);
            stopWithSigterm(broker.process(), dir.resolve("first.log"));
        } finally {
            killIfAlive(broker.process());
        }
        // Started again on the same data: the ten confirmed messages are there.
        Broker again = startJar(data, dir.resolve("second.log"));
        try {
            try (Connection c = connect(again.port())) {
                assertEquals(10L, c.declareQueue("q", QueueSettings.EMPTY), "ready messages after the restart");
            }
            stopWithSigterm(again.process(), dir.resolve("second.log"));
        } finally {
            killIfAlive(again.process());
        }
    }

    @Test
    void shouldStillStopGracefullyOnSigtermSecondsAfterStarting() throws Exception {
        Path log = dir.resolve("broker.log");
        Broker broker = startJar(dir.resolve("data"), log);
        try {
            publish(broker.port(), "q", 1);
            // Not a wait for something to happen: the scenario itself. Chronicle can install its signal
            // handlers again after the store opened, so SIGTERM must work seconds into the broker's life too.
            Thread.sleep(3_000);
            stopWithSigterm(broker.process(), log);
        } finally {
            killIfAlive(broker.process());
        }
    }

    /** A broker process started from the jar, and the port it listens on. */
    private record Broker(Process process, int port) {
    }

    private static Broker startJar(Path data, Path log) throws Exception {
        Path jar = Path.of(System.getProperty("sluice.test.brokerJar"));
        assertTrue(Files.isRegularFile(jar), "the packaged broker " + jar + " exists (run with mvn verify)");
        int port = TestPorts.free();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process process = new ProcessBuilder(List.of(java, "-jar", jar.toString(), "--data-dir", data.toString(),
                "--port", Integer.toString(port), "--set", "storage.reserved-disk-bytes=67108864", "--set", "metrics.port=0"))
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .start();
        ChildJvm.awaitListening(process, port, log);
        return new Broker(process, port);
    }

    private static Connection connect(int port) {
        return Connection.connect(ConnectionOptions.builder().port(port).reconnectPolicy(ReconnectPolicy.DISABLED).build());
    }

    private static void publish(int port, String queue, int messages) {
        try (Connection c = connect(port)) {
            c.declareQueue(queue, QueueSettings.EMPTY);
            Producer p = c.createProducer(queue, ProducerOptions.DEFAULT);
            for (int i = 0; i < messages; i++) {
                p.send(("m" + i).getBytes(StandardCharsets.UTF_8));
            }
        }
    }

    private static void stopWithSigterm(Process broker, Path log) throws InterruptedException {
        broker.destroy(); // SIGTERM on Linux
        assertTrue(broker.waitFor(30, TimeUnit.SECONDS), "the broker stops on SIGTERM; its log:\n" + ChildJvm.tail(log));
        assertEquals(0, broker.exitValue(), "a clean stop on SIGTERM exits with 0; log:\n" + ChildJvm.tail(log));
        String output = String.join("\n", ChildJvm.lines(log));
        assertTrue(output.contains("Shut down cleanly"), "the shutdown hook ran:\n" + ChildJvm.tail(log));
        assertTrue(output.contains("sluice: stopped"), ChildJvm.tail(log));
    }

    private static void killIfAlive(Process process) throws InterruptedException {
        if (process.isAlive()) {
            ChildJvm.kill(process);
        }
    }
}
