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
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * bin/sluice builds the broker first when its sources changed since the last build, and only then. Maven leaves the
 * broker jar as it was when nothing of the broker's own classes changed, so a check against the jar's time alone asked
 * for a build at every start after an edit elsewhere (under bench/, which the broker is not made of; or one that left
 * the broker's classes the same): about 5 s of Maven before each start. Here {@code mvn} and {@code java} are stubs on
 * the PATH: {@code mvn} counts its runs and, like Maven with nothing to do for the jar, leaves it alone.
 */
@Timeout(60)
class BinSluiceRebuildTest {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    private static final Instant BUILT = Instant.now().minusSeconds(3_600);

    @TempDir
    Path dir;
    private Path checkout;
    private Path stubs;
    private Path builds;

    @BeforeEach
    void layOutACheckoutBuiltAnHourAgo() throws IOException {
        checkout = Files.createDirectories(dir.resolve("checkout"));
        Files.createDirectories(checkout.resolve("bin"));
        for (String script : List.of("sluice", "sluice-jvm-options")) {
            Files.copy(ROOT.resolve("bin").resolve(script), checkout.resolve("bin").resolve(script), StandardCopyOption.COPY_ATTRIBUTES);
        }
        for (String module : List.of("broker", "storage", "client", "bench")) {
            Path source = checkout.resolve(module).resolve("src/main/java/Source.java");
            Files.createDirectories(source.getParent());
            Files.writeString(source, "class Source {}");
            Files.writeString(checkout.resolve(module).resolve("pom.xml"), "<project/>");
            age(checkout.resolve(module).resolve("pom.xml"), -60);
            try (var paths = Files.walk(checkout.resolve(module).resolve("src"))) {
                for (Path path : paths.toList()) {
                    age(path, -60); // directories too: a file added to or removed from one changes its time
                }
            }
        }
        Files.writeString(checkout.resolve("pom.xml"), "<project/>");
        age(checkout.resolve("pom.xml"), -60);
        Path jar = checkout.resolve("broker/target/sluice-broker-0.1.0-SNAPSHOT.jar");
        Files.createDirectories(jar.getParent().resolve("lib"));
        Files.writeString(jar, "jar");
        age(jar, 0);
        stubs = Files.createDirectories(dir.resolve("stubs/bin"));
        builds = dir.resolve("builds.log");
        stub("mvn", "echo built >> '" + builds + "'\n");
        stub("java", "echo 'sluice 0.1.0-SNAPSHOT'\n");
    }

    @Test
    void anEditOutsideTheBrokersModulesBuildsNothing() throws Exception {
        run();
        age(checkout.resolve("bench/src/main/java/Source.java"), 60);
        run();
        run();
        assertEquals(0, builds(), "bench/ is not part of the broker");
    }

    @Test
    void anEditOfAModuleTheBrokerIsMadeOfBuildsOnceEvenIfMavenLeavesTheJarAsItWas() throws Exception {
        age(checkout.resolve("storage/src/main/java/Source.java"), 60);
        run();
        assertEquals(1, builds(), "the edit is built");
        run();
        run();
        assertEquals(1, builds(), "and only once");
        Path pom = checkout.resolve("broker/pom.xml");
        Files.setLastModifiedTime(pom, FileTime.from(Instant.now().plusSeconds(5)));
        run();
        assertEquals(2, builds(), "a pom of the broker's modules counts too");
    }

    private void run() throws Exception {
        ProcessBuilder builder = new ProcessBuilder("bash", checkout.resolve("bin/sluice").toString(), "--version")
                .redirectErrorStream(true);
        builder.environment().put("PATH", stubs + ":" + System.getenv("PATH"));
        builder.environment().put("SLUICE_JAVA_OPTS", "-Xshare:off"); // no class archive, no training run
        Process process = builder.start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, process.exitValue(), output);
        assertTrue(output.contains("sluice 0.1.0-SNAPSHOT"), output);
    }

    private int builds() throws IOException {
        return Files.exists(builds) ? Files.readAllLines(builds).size() : 0;
    }

    private void stub(String name, String body) throws IOException {
        Path file = stubs.resolve(name);
        Files.writeString(file, "#!/bin/sh\n" + body);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    /** Sets {@code file}'s time to {@code seconds} after the build an hour ago. */
    private static void age(Path file, long seconds) throws IOException {
        Files.setLastModifiedTime(file, FileTime.from(BUILT.plusSeconds(seconds)));
    }
}
