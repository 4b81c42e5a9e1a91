package io.sluice.broker;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * bin/sluice on a fresh checkout, laid out as one is after its first build (bin/sluice, broker/target with the
 * packaged jar and its lib/, no class archive yet): the broker runs on its embedded defaults at once, the training
 * run makes the class archive in the background, and the next start maps it (the class-load log names the
 * archive, "shared objects file", as the source of the broker's classes). A stale or unusable archive never
 * stops a start. Only the ports and the data directory are set, because tests listen on free ports.
 */
@Tag("slow")
@Timeout(300)
class BinSluiceIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    /** The training run is a broker start, two publishes and a class dump at the lowest CPU priority; generous on shared cores. */
    private static final Duration TRAINING_DEADLINE = Duration.ofSeconds(180);

    @TempDir
    Path dir;
    private Path checkout;
    private Path target;

    @BeforeEach
    void layOutAFreshCheckout() throws IOException {
        Path jar = Path.of(System.getProperty("sluice.test.brokerJar"));
        assertTrue(Files.isRegularFile(jar), "the packaged broker " + jar + " exists (run with mvn verify)");
        checkout = Files.createDirectory(dir.resolve("checkout"));
        Files.createDirectories(checkout.resolve("bin"));
        for (String script : List.of("sluice", "sluice-jvm-options")) {
            Files.copy(ROOT.resolve("bin").resolve(script), checkout.resolve("bin").resolve(script), StandardCopyOption.COPY_ATTRIBUTES);
        }
        target = Files.createDirectories(checkout.resolve("broker/target"));
        Files.copy(jar, target.resolve(jar.getFileName()), StandardCopyOption.COPY_ATTRIBUTES);
        Files.createSymbolicLink(target.resolve("lib"), jar.resolveSibling("lib"));
    }

    @Test
    void shouldRunOnItsDefaultsThenMakeTheClassArchiveAndStartFromIt() throws Exception {
        Path archive = target.resolve("sluice-broker.jsa");
        Path key = target.resolve("sluice-broker.jsa.key");
        Path first = dir.resolve("first.log");
        List<String> command = startAndStop(first, null);
        // bin/sluice-jvm-options' options, as the JVM got them: the heap's and the young generation's caps (the 1,000-queue
        // RSS target rests on them), an exit on running out of heap, and on this Java the trimming of malloc's heap.
        assertTrue(command.containsAll(List.of("-Xmx1g", "-XX:MaxNewSize=64m", "-XX:+ExitOnOutOfMemoryError")), command.toString());
        Runtime.Version java = Runtime.version();
        assertEquals(java.feature() >= 22 || java.feature() == 21 && java.update() >= 1 || java.feature() == 17 && java.update() >= 9,
                command.contains("-XX:TrimNativeHeapInterval=5000"), "trimming on " + java + ": " + command);
        // The embedded defaults, logged in the broker's line format (LogConfigurator).
        assertTrue(ChildJvm.lines(first).stream().anyMatch(l -> l.matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}(Z|[+-]\\d\\d:\\d\\d) INFO  \\[main]"
                + " Broker - Sluice broker 'sluice' listening on /127\\.0\\.0\\.1:\\d+ .*durability always\\), started in \\d+ ms.*")),
                ChildJvm.tail(first));
        TestAwait.until("the training run wrote the class archive and its key", TRAINING_DEADLINE,
                () -> Files.isRegularFile(key) && Files.isRegularFile(archive));
        assertTrue(Files.size(archive) > 1 << 20, "an archive of the broker's classes: " + Files.size(archive) + " bytes");

        Path classLoads = dir.resolve("class-load.log");
        List<String> second = startAndStop(dir.resolve("second.log"), "-Xmx512m -Xlog:class+load:file=" + classLoads);
        assertTrue(second.indexOf("-Xmx512m") > second.indexOf("-Xmx1g"), "SLUICE_JAVA_OPTS comes later, so it wins: " + second);
        List<String> loads = Files.readAllLines(classLoads);
        assertTrue(loads.stream().anyMatch(l -> l.contains(" io.sluice.broker.Broker source: shared objects file (top)")),
                "the broker's classes come from the archive");
        assertTrue(loads.stream().anyMatch(l -> l.contains(" net.openhft.chronicle.core.Jvm source: shared objects file")),
                "Chronicle's classes come from the archive");
    }

    @Test
    void shouldStartWithoutAnArchiveTheJvmCannotUseAndRetrainWhenTheJarChanges() throws Exception {
        Path archive = target.resolve("sluice-broker.jsa");
        Path key = target.resolve("sluice-broker.jsa.key");
        startAndStop(dir.resolve("first.log"), null);
        TestAwait.until("the training run wrote the class archive and its key", TRAINING_DEADLINE, () -> Files.isRegularFile(key));

        // The right key, a damaged archive: the JVM maps nothing and the broker starts all the same.
        Files.delete(archive);
        Files.writeString(archive, "not a class archive");
        Path damaged = dir.resolve("damaged.log");
        startAndStop(damaged, null);

        // A rebuilt jar: the key no longer matches, so the start runs without the archive and a training run replaces it.
        String oldKey = Files.readString(key);
        Path jar = target.resolve(Path.of(System.getProperty("sluice.test.brokerJar")).getFileName());
        Files.setLastModifiedTime(jar, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() + 2_000));
        Path stale = dir.resolve("stale.log");
        startAndStop(stale, null);
        assertFalse(ChildJvm.lines(stale).stream().anyMatch(l -> l.contains("[cds")), "no warning about the old archive:\n"
                + ChildJvm.tail(stale));
        TestAwait.until("a training run for the new jar", TRAINING_DEADLINE, () -> {
            try {
                return !Files.readString(key).equals(oldKey) && Files.size(archive) > 1 << 20;
            } catch (IOException e) {
                return false;
            }
        });
    }

    @Test
    void shouldTrainInTheForegroundWhenAskedSoThatTheStartAfterItUsesTheArchive() throws Exception {
        Path archive = target.resolve("sluice-broker.jsa");
        Path key = target.resolve("sluice-broker.jsa.key");
        ProcessBuilder builder = new ProcessBuilder("bash", checkout.resolve("bin/sluice").toString(), "--version")
                .redirectErrorStream(true).redirectOutput(dir.resolve("version.log").toFile());
        builder.environment().put("PATH", Path.of(System.getProperty("java.home"), "bin") + ":" + System.getenv("PATH"));
        builder.environment().remove("SLUICE_JAVA_OPTS");
        builder.environment().put("SLUICE_CLASS_ARCHIVE_DELAY", "foreground");
        Process version = builder.start();
        assertTrue(version.waitFor(TRAINING_DEADLINE.toSeconds(), TimeUnit.SECONDS), "bin/sluice --version with a training first");
        assertEquals(0, version.exitValue(), ChildJvm.tail(dir.resolve("version.log")));
        // Already there when bin/sluice returns: no waiting for a background run.
        assertTrue(Files.isRegularFile(key) && Files.size(archive) > 1 << 20, "the archive and its key, made before the start");

        Path classLoads = dir.resolve("class-load.log");
        startAndStop(dir.resolve("after.log"), "-Xlog:class+load:file=" + classLoads);
        assertTrue(Files.readAllLines(classLoads).stream().anyMatch(l -> l.contains(" io.sluice.broker.Broker source: shared objects file (top)")),
                "the next start maps the broker's classes from it");
    }

    /**
     * Runs bin/sluice until it logs that it listens, then stops it with SIGTERM and checks it stopped cleanly; returns
     * the broker JVM's command line (bin/sluice execs java, so the process is the JVM).
     */
    private List<String> startAndStop(Path log, String javaOptions) throws Exception {
        int port = TestPorts.free();
        ProcessBuilder builder = new ProcessBuilder("bash", checkout.resolve("bin/sluice").toString(), "--data-dir",
                dir.resolve("data").toString(), "--port", Integer.toString(port), "--metrics-port", Integer.toString(TestPorts.free()))
                .redirectErrorStream(true).redirectOutput(log.toFile());
        builder.environment().put("PATH", Path.of(System.getProperty("java.home"), "bin") + ":" + System.getenv("PATH"));
        builder.environment().remove("SLUICE_JAVA_OPTS");
        builder.environment().put("SLUICE_CLASS_ARCHIVE_DELAY", "0"); // no minute's wait after each start here
        if (javaOptions != null) {
            builder.environment().put("SLUICE_JAVA_OPTS", javaOptions);
        }
        Process broker = builder.start();
        List<String> command;
        try {
            ChildJvm.awaitOutput(broker, log, "the broker's 'listening' line", l -> l.contains("listening on /127.0.0.1:" + port));
            command = List.of(Files.readString(Path.of("/proc", Long.toString(broker.pid()), "cmdline")).split("\0"));
        } finally {
            broker.destroy();
            if (!broker.waitFor(30, TimeUnit.SECONDS)) {
                ChildJvm.kill(broker);
            }
        }
        assertEquals(0, broker.exitValue(), "bin/sluice's broker stops cleanly on SIGTERM:\n" + ChildJvm.tail(log));
        assertTrue(ChildJvm.lines(log).stream().anyMatch(l -> l.contains("Shut down cleanly.")), ChildJvm.tail(log));
        return command;
    }
}
