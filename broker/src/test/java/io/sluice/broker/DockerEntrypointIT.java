package io.sluice.broker;

import io.sluice.broker.auth.PasswordHasher;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docker/entrypoint.sh and docker/healthcheck.sh, run against the packaged jar laid out as the image lays
 * it out (/opt/sluice: the scripts, sluice-broker.jar, lib/). There is no container engine here, so this
 * is as close to the image as a test gets: the entry point's own arguments reach the jar. Its
 * {@code --listen 0.0.0.0} is checked with {@code --check-config}, which binds nothing; the run that
 * really starts appends loopback overrides, since tests listen on 127.0.0.1 only.
 */
@Timeout(120)
class DockerEntrypointIT {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();

    @TempDir
    Path dir;
    private Path home;

    @BeforeEach
    void layOutTheImage() throws IOException {
        Path jar = Path.of(System.getProperty("sluice.test.brokerJar"));
        assertTrue(Files.isRegularFile(jar), "the packaged broker " + jar + " exists (run with mvn verify)");
        home = Files.createDirectory(dir.resolve("opt-sluice"));
        for (String script : List.of("docker/entrypoint.sh", "docker/healthcheck.sh", "bin/sluice-jvm-options")) {
            Files.copy(ROOT.resolve(script), home.resolve(Path.of(script).getFileName()));
        }
        Files.createSymbolicLink(home.resolve("sluice-broker.jar"), jar);
        Files.createSymbolicLink(home.resolve("lib"), jar.resolveSibling("lib"));
    }

    @Test
    void shouldRefuseToStartWithoutUsersNamingBothWaysToGiveThem() throws Exception {
        Run run = entrypoint(Map.of(), List.of());
        assertEquals(2, run.exitCode, run.output);
        assertEquals("sluice image: no users configured: mount a configuration with auth.users at " + DEFAULT_CONFIG
                + ", or set SLUICE_USER and SLUICE_PASSWORD_HASH (print a hash with: docker run --rm -i IMAGE hash-password)\n",
                run.output);
    }

    /**
     * SLUICE_CONFIG naming no file (a typo, a volume mounted elsewhere) was taken for "no configuration": the broker started
     * on the users of SLUICE_USER and the defaults, without a word about the file it was told to read.
     */
    @Test
    void shouldRefuseASluiceConfigThatNamesNoFile() throws Exception {
        Path missing = dir.resolve("missing.yaml");
        Run run = entrypoint(with(users(), "SLUICE_CONFIG", missing.toString()), List.of("--check-config"));
        assertEquals(2, run.exitCode, run.output);
        assertEquals("sluice image: SLUICE_CONFIG names " + missing + ", which does not exist: mount the configuration there,"
                + " or unset SLUICE_CONFIG\n", run.output);

        Run directory = entrypoint(with(users(), "SLUICE_CONFIG", dir.toString()), List.of("--check-config"));
        assertEquals(2, directory.exitCode, directory.output);
        assertEquals("sluice image: SLUICE_CONFIG names " + dir + ", which is a directory, not a configuration file\n",
                directory.output);
    }

    /** One of the two was taken for neither: the refusal said "no users configured", not which one was missing. */
    @Test
    void shouldNameTheHalfOfTheUserThatIsMissing() throws Exception {
        Run user = entrypoint(Map.of("SLUICE_USER", "app"), List.of("--check-config"));
        assertEquals(2, user.exitCode, user.output);
        assertEquals("sluice image: SLUICE_USER is set but SLUICE_PASSWORD_HASH is not; the user needs both (print a hash with:"
                + " docker run --rm -i IMAGE hash-password)\n", user.output);
        Run hash = entrypoint(Map.of("SLUICE_PASSWORD_HASH", users().get("SLUICE_PASSWORD_HASH")), List.of("--check-config"));
        assertEquals(2, hash.exitCode, hash.output);
        assertEquals("sluice image: SLUICE_PASSWORD_HASH is set but SLUICE_USER is not; the user needs both\n", hash.output);
    }

    /**
     * A mounted configuration and SLUICE_USER together: the configuration was used and the variables ignored without a word,
     * so the user they name could not log in.
     */
    @Test
    void shouldRefuseUsersFromTheEnvironmentBesideAMountedConfiguration() throws Exception {
        Path config = dir.resolve("mounted.yaml");
        Files.writeString(config, "auth:\n  allow-anonymous: false\n  users:\n    - name: ops\n      password-hash: \""
                + PasswordHasher.hash("secret".toCharArray()) + "\"\n");
        Run run = entrypoint(with(users(), "SLUICE_CONFIG", config.toString()), List.of("--check-config"));
        assertEquals(2, run.exitCode, run.output);
        assertEquals("sluice image: SLUICE_USER is set and a configuration is mounted at " + config + "; the image takes users"
                + " one way: put them in the configuration's auth.users and unset SLUICE_USER and SLUICE_PASSWORD_HASH\n", run.output);
    }

    /** Set to nothing (docker run -e SLUICE_CONFIG= ...), each was read as unset and its default used without a word. */
    @Test
    void shouldRefuseAnEmptySluiceConfigOrDataDirectory() throws Exception {
        Run config = entrypoint(with(users(), "SLUICE_CONFIG", ""), List.of("--check-config"));
        assertEquals(2, config.exitCode, config.output);
        assertEquals("sluice image: SLUICE_CONFIG is set but empty: name the configuration file, or unset it for "
                + DEFAULT_CONFIG + "\n", config.output);

        Run data = entrypoint(with(users(), "SLUICE_DATA_DIR", ""), List.of("--check-config"));
        assertEquals(2, data.exitCode, data.output);
        assertEquals("sluice image: SLUICE_DATA_DIR is set but empty: name the data directory, or unset it for /var/lib/sluice\n",
                data.output);
    }

    /** docs/security.md's `sluice certs` makes a cluster's certificates; in the image it was taken for a broker start (found by a review). */
    @Test
    void shouldPassTheCertificateCommandThrough() throws Exception {
        Run run = entrypoint(Map.of(), List.of("certs"));
        assertTrue(run.output.startsWith("usage: sluice certs ca DIR"), run.output);
    }

    @Test
    void shouldShowWhyTheOldEntrypointCouldNotStart() throws Exception {
        // The former ENTRYPOINT: --listen 0.0.0.0 and no users, which protected mode refuses.
        Run run = command(List.of(java(), "-jar", home.resolve("sluice-broker.jar").toString(), "--data-dir",
                dir.resolve("data").toString(), "--listen", "0.0.0.0", "--check-config"), Map.of());
        assertEquals(2, run.exitCode, run.output);
        assertTrue(run.output.contains("0.0.0.0") && run.output.contains("auth.users"), run.output);
    }

    @Test
    void shouldPassTheConfigurationCheckWithUsersFromTheEnvironmentOnItsOwnArguments() throws Exception {
        Run run = entrypoint(users(), List.of("--check-config"));
        assertEquals(0, run.exitCode, run.output);
        assertTrue(run.output.contains("configuration is valid (clients on 0.0.0.0:7672, data in " + dir.resolve("data") + ")"),
                run.output);
    }

    @Test
    void shouldPassTheConfigurationCheckWithAMountedConfiguration() throws Exception {
        Path config = dir.resolve("mounted.yaml");
        Files.writeString(config, "auth:\n  allow-anonymous: false\n  users:\n    - name: ops\n      password-hash: \""
                + PasswordHasher.hash("secret".toCharArray()) + "\"\n");
        Run run = entrypoint(Map.of("SLUICE_CONFIG", config.toString()), List.of("--check-config"));
        assertEquals(0, run.exitCode, run.output);
    }

    /** The generated configuration's load checks the hash whole: one no password could match is refused, not started with. */
    @Test
    void shouldRefuseAPasswordHashNoPasswordCouldMatch() throws Exception {
        Run run = entrypoint(Map.of("SLUICE_USER", "app", "SLUICE_PASSWORD_HASH", "pbkdf2-sha256:0:AAAA:AAAA"), List.of("--check-config"));
        assertEquals(2, run.exitCode, run.output);
        assertTrue(run.output.contains("auth.users[0].password-hash of user 'app' has 0 iterations, outside 1000..10000000"),
                run.output);
    }

    @Test
    void shouldRefuseAUserNameThatCouldBreakTheGeneratedYaml() throws Exception {
        Run run = entrypoint(Map.of("SLUICE_USER", "a\"b", "SLUICE_PASSWORD_HASH", "pbkdf2-sha256:1:a:b"), List.of());
        assertEquals(2, run.exitCode, run.output);
        assertEquals("sluice image: SLUICE_USER 'a\"b' may hold only A-Z a-z 0-9 . _ -\n", run.output);
    }

    @Test
    void shouldStartAndBeHealthyOnceReady() throws Exception {
        int port = TestPorts.free();
        int metricsPort = TestPorts.free();
        Path healthcheck = home.resolve("healthcheck.sh");
        assertEquals(1, command(List.of("bash", healthcheck.toString(), Integer.toString(metricsPort)), Map.of()).exitCode,
                "unhealthy while nothing listens");
        List<String> command = new ArrayList<>(List.of("sh", home.resolve("entrypoint.sh").toString(),
                "--listen", "127.0.0.1", "--set", "metrics.listen-address=127.0.0.1", "--port", Integer.toString(port),
                "--metrics-port", Integer.toString(metricsPort), "--set", "storage.reserved-disk-bytes=67108864"));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(dir.resolve("broker.log").toFile());
        builder.environment().remove("SLUICE_CONFIG");
        builder.environment().putAll(environment(users()));
        Process broker = builder.start();
        try {
            ChildJvm.awaitListening(broker, port, dir.resolve("broker.log"));
            List<String> jvm = List.of(Files.readString(Path.of("/proc", Long.toString(broker.pid()), "cmdline")).split("\0"));
            assertTrue(jvm.containsAll(List.of("-Xmx1g", "-XX:MaxNewSize=64m", "-XX:+ExitOnOutOfMemoryError")),
                    "the JVM options bin/sluice starts a broker with (sluice-jvm-options): " + jvm);
            TestAwait.until("the HEALTHCHECK passes", () -> {
                try {
                    return command(List.of("bash", healthcheck.toString(), Integer.toString(metricsPort)), Map.of()).exitCode == 0;
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            });
        } finally {
            broker.destroy();
            if (!broker.waitFor(30, TimeUnit.SECONDS)) {
                ChildJvm.kill(broker);
            }
        }
        assertEquals(0, broker.exitValue(), "the broker, exec'd by the entry point, stops cleanly on SIGTERM:\n"
                + ChildJvm.tail(dir.resolve("broker.log")));
    }

    @Test
    @Timeout(300)
    void shouldStartFromTheClassArchiveTheDockerfileMakes() throws Exception {
        // The Dockerfile's own training command, with the image's /opt/sluice where this test laid the image out.
        java.util.regex.Matcher training = java.util.regex.Pattern.compile("RUN (java -XX:ArchiveClassesAtExit=\\S+ -jar \\S+ class-archive-training)")
                .matcher(Files.readString(ROOT.resolve("Dockerfile")));
        assertTrue(training.find(), "the Dockerfile trains the class archive");
        List<String> command = new ArrayList<>(List.of(training.group(1).replace("/opt/sluice", home.toString()).split(" ")));
        command.set(0, java());
        assertTrue(command.contains("-XX:ArchiveClassesAtExit=" + home.resolve("sluice-broker.jsa")), command.toString());
        Run trained = command(command, Map.of("TMPDIR", dir.toString()), 180);
        assertEquals(0, trained.exitCode, trained.output);
        assertTrue(Files.size(home.resolve("sluice-broker.jsa")) > 1 << 20, "the archive holds the broker's classes");

        int port = TestPorts.free();
        Path classLoads = dir.resolve("class-load.log");
        Map<String, String> env = new java.util.HashMap<>(users());
        env.put("SLUICE_JAVA_OPTS", "-Xlog:class+load:file=" + classLoads);
        Path log = dir.resolve("broker.log");
        ProcessBuilder builder = new ProcessBuilder("sh", home.resolve("entrypoint.sh").toString(), "--listen", "127.0.0.1",
                "--set", "metrics.listen-address=127.0.0.1", "--port", Integer.toString(port), "--metrics-port",
                Integer.toString(TestPorts.free()), "--set", "storage.reserved-disk-bytes=67108864")
                .redirectErrorStream(true).redirectOutput(log.toFile());
        builder.environment().remove("SLUICE_CONFIG");
        builder.environment().putAll(environment(env));
        Process broker = builder.start();
        try {
            ChildJvm.awaitOutput(broker, log, "the broker's 'listening' line", l -> l.contains("listening on /127.0.0.1:" + port));
        } finally {
            broker.destroy();
            if (!broker.waitFor(30, TimeUnit.SECONDS)) {
                ChildJvm.kill(broker);
            }
        }
        assertTrue(Files.readAllLines(classLoads).stream().anyMatch(l -> l.contains(" io.sluice.broker.Broker source: shared objects file (top)")),
                "the entry point starts the broker from the image's class archive");
    }

    /** The image's default configuration path; the tests without SLUICE_CONFIG need this machine not to have one there. */
    private static final String DEFAULT_CONFIG = "/etc/sluice/sluice.yaml";

    private static void assumeNoDefaultConfiguration() {
        org.junit.jupiter.api.Assumptions.assumeFalse(Files.exists(Path.of(DEFAULT_CONFIG)), DEFAULT_CONFIG + " exists on this machine");
    }

    private static Map<String, String> with(Map<String, String> env, String name, String value) {
        Map<String, String> more = new java.util.HashMap<>(env);
        more.put(name, value);
        return more;
    }

    private Map<String, String> users() {
        return Map.of("SLUICE_USER", "app", "SLUICE_PASSWORD_HASH", PasswordHasher.hash("secret".toCharArray()));
    }

    private Map<String, String> environment(Map<String, String> extra) {
        if (!extra.containsKey("SLUICE_CONFIG")) {
            assumeNoDefaultConfiguration();
        }
        Map<String, String> env = new java.util.HashMap<>(Map.of(
                "SLUICE_DATA_DIR", dir.resolve("data").toString(),
                "TMPDIR", dir.toString(),
                "PATH", Path.of(java()).getParent() + ":" + System.getenv("PATH")));
        env.putAll(extra);
        return env;
    }

    private Run entrypoint(Map<String, String> env, List<String> args) throws Exception {
        List<String> command = new ArrayList<>(List.of("sh", home.resolve("entrypoint.sh").toString()));
        command.addAll(args);
        return command(command, environment(env));
    }

    private static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** How a command ended: exit code and its merged output. */
    private record Run(int exitCode, String output) {
    }

    private Run command(List<String> command, Map<String, String> env) throws Exception {
        return command(command, env, 60);
    }

    private Run command(List<String> command, Map<String, String> env, int timeoutSeconds) throws Exception {
        Path output = Files.createTempFile(dir, "run", ".log");
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile());
        builder.environment().remove("SLUICE_USER");
        builder.environment().remove("SLUICE_PASSWORD_HASH");
        builder.environment().remove("SLUICE_CONFIG");
        builder.environment().putAll(env);
        Process process = builder.start();
        if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            ChildJvm.kill(process);
            throw new AssertionError(command + " did not finish within " + timeoutSeconds + " s:\n" + Files.readString(output));
        }
        return new Run(process.exitValue(), Files.readString(output));
    }
}
