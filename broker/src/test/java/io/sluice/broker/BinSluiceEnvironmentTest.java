package io.sluice.broker;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The environment bin/sluice reads besides SLUICE_JAVA_OPTS: SLUICE_CLASS_ARCHIVE_DELAY takes seconds or {@code foreground},
 * and anything else is refused before a JVM starts. Found by a review: {@code abc}, {@code -5} and an empty value became
 * 60 without a word (and were not even looked at while a class archive was in use). {@code java} and {@code mvn} are stubs
 * on the PATH, as in {@link BinSluiceRebuildTest}: {@code java} prints the version the broker would.
 */
@Timeout(60)
class BinSluiceEnvironmentTest {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();

    @TempDir
    Path dir;
    private Path checkout;
    private Path stubs;

    @BeforeEach
    void layOutABuiltCheckout() throws IOException {
        checkout = Files.createDirectories(dir.resolve("checkout"));
        Files.createDirectories(checkout.resolve("bin"));
        for (String script : List.of("sluice", "sluice-jvm-options")) {
            Files.copy(ROOT.resolve("bin").resolve(script), checkout.resolve("bin").resolve(script), StandardCopyOption.COPY_ATTRIBUTES);
        }
        Path jar = checkout.resolve("broker/target/sluice-broker-0.1.0-SNAPSHOT.jar");
        Files.createDirectories(jar.getParent().resolve("lib"));
        Files.writeString(jar, "jar");
        Files.writeString(checkout.resolve("pom.xml"), "<project/>");
        Files.setLastModifiedTime(checkout.resolve("pom.xml"), Files.getLastModifiedTime(jar));
        stubs = Files.createDirectories(dir.resolve("stubs/bin"));
        stub("mvn", "echo 'mvn was run' >&2\nexit 1\n");
        stub("java", "echo 'sluice 0.1.0-SNAPSHOT'\n");
    }

    @Test
    void aDelayThatIsNoNumberOfSecondsIsRefused() throws Exception {
        for (String delay : List.of("abc", "-5", "1.5", "60s", " 60", "+60")) {
            Run run = run(Map.of("SLUICE_CLASS_ARCHIVE_DELAY", delay));
            assertEquals(2, run.exitCode, delay + ": " + run.output);
            assertEquals("sluice: SLUICE_CLASS_ARCHIVE_DELAY '" + delay + "' is not a whole number of seconds (0 or more)"
                    + " or foreground\n", run.output, delay);
        }
        Run empty = run(Map.of("SLUICE_CLASS_ARCHIVE_DELAY", ""));
        assertEquals(2, empty.exitCode, empty.output);
        assertEquals("sluice: SLUICE_CLASS_ARCHIVE_DELAY is set but empty: give seconds (0 or more) or foreground, or unset it"
                + " for 60\n", empty.output);
    }

    @Test
    void secondsAndForegroundAreTaken() throws Exception {
        for (String delay : List.of("0", "60", "3600", "foreground")) {
            Run run = run(Map.of("SLUICE_CLASS_ARCHIVE_DELAY", delay));
            assertEquals(0, run.exitCode, delay + ": " + run.output);
            assertEquals("sluice 0.1.0-SNAPSHOT\n", run.output, delay);
        }
        Run unset = run(Map.of());
        assertEquals(0, unset.exitCode, unset.output);
    }

    /** How bin/sluice ended: its exit code and its merged output. */
    private record Run(int exitCode, String output) {
    }

    private Run run(Map<String, String> env) throws Exception {
        ProcessBuilder builder = new ProcessBuilder("bash", checkout.resolve("bin/sluice").toString(), "--version")
                .redirectErrorStream(true);
        builder.environment().put("PATH", stubs + ":" + System.getenv("PATH"));
        builder.environment().remove("SLUICE_CLASS_ARCHIVE_DELAY");
        // Class sharing of its own: bin/sluice leaves the archive alone and starts no training run of the stub.
        builder.environment().put("SLUICE_JAVA_OPTS", "-Xshare:off");
        builder.environment().putAll(env);
        Process process = builder.start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(30, TimeUnit.SECONDS), "bin/sluice ended");
        return new Run(process.exitValue(), output);
    }

    private void stub(String name, String body) throws IOException {
        Path file = stubs.resolve(name);
        Files.writeString(file, "#!/bin/sh\n" + body);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
    }
}
