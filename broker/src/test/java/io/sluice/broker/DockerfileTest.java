package io.sluice.broker;

import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Keeps the Dockerfile, its scripts and README's container section in step, since no container engine
 * runs here to build the image: the same build command as bin/sluice, this build's jar, the default
 * ports exposed, a health check on /health/ready, a non-root user, a dependency layer before the
 * sources, a .dockerignore, and README naming exactly the variables the entry point reads.
 */
class DockerfileTest {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();

    private static String read(String path) throws IOException {
        return Files.readString(ROOT.resolve(path));
    }

    @Test
    void shouldBuildWithTheCommandOfBinSluiceAndCopyThisBuildsJar() throws IOException {
        String dockerfile = read("Dockerfile");
        Matcher build = Pattern.compile("mvn -B -q package -DskipTests -pl broker -am").matcher(read("bin/sluice"));
        assertTrue(build.find(), "bin/sluice builds with the command this test looks for");
        assertTrue(dockerfile.contains("RUN " + build.group()), dockerfile);
        assertTrue(read("README.md").contains("`" + build.group() + "`"), "README names the build command");
        String pom = read("pom.xml");
        int start = pom.indexOf("<version>", pom.indexOf("<artifactId>sluice-parent</artifactId>")) + "<version>".length();
        String version = pom.substring(start, pom.indexOf("</version>", start));
        assertTrue(dockerfile.contains("/src/broker/target/sluice-broker-" + version + ".jar ./sluice-broker.jar"), dockerfile);
    }

    @Test
    void shouldCopyWhatTheEntrypointSourcesNextToIt() throws IOException {
        // The entry point runs from /opt/sluice and sources its JVM options from beside it ("$home/..."), as bin/sluice
        // sources them from bin/: an image without the file would not start.
        Matcher sourced = Pattern.compile("(?m)^\\. \"\\$home/([^\"]+)\"$").matcher(read("docker/entrypoint.sh"));
        assertTrue(sourced.find(), "the entry point sources the JVM options");
        String file = sourced.group(1);
        assertEquals("sluice-jvm-options", file);
        Matcher copy = Pattern.compile("(?m)^COPY (?!--from)(.*) \\./$").matcher(read("Dockerfile"));
        List<String> copied = new ArrayList<>();
        while (copy.find()) {
            copied.addAll(List.of(copy.group(1).split(" ")));
        }
        assertTrue(copied.contains("bin/" + file), "the Dockerfile copies bin/" + file + " into /opt/sluice: " + copied);
        assertTrue(read("bin/sluice").contains(". \"$root/bin/" + file + "\""), "bin/sluice sources the same file");
    }

    @Test
    void shouldExposeTheDefaultPortsAndCheckReadiness() throws IOException {
        String dockerfile = read("Dockerfile");
        BrokerConfig defaults = new ConfigLoader().load(null, Map.of());
        assertTrue(dockerfile.contains("\nEXPOSE " + defaults.broker.port + " " + defaults.metrics.port + "\n"), dockerfile);
        assertTrue(dockerfile.contains("HEALTHCHECK") && dockerfile.contains("healthcheck.sh\", \"" + defaults.metrics.port + "\"]"),
                dockerfile);
        assertTrue(read("docker/healthcheck.sh").contains("GET /health/ready "), "the health check asks /health/ready");
        String readme = read("README.md");
        assertTrue(readme.contains("`" + defaults.broker.port + "` (clients)") && readme.contains("`" + defaults.metrics.port + "` (metrics"),
                "README names the exposed ports");
    }

    @Test
    void shouldRunAsANonRootUserAndCacheDependenciesBeforeTheSources() throws IOException {
        String dockerfile = read("Dockerfile");
        List<String> lines = dockerfile.lines().toList();
        String user = lines.stream().filter(l -> l.startsWith("USER ")).reduce((a, b) -> b).orElse("USER root");
        assertFalse(user.equals("USER root") || user.equals("USER 0"), "the image runs as " + user);
        int offline = dockerfile.indexOf("dependency:go-offline");
        assertTrue(offline > 0 && offline < dockerfile.indexOf("COPY storage/src"), "dependencies are resolved before the sources are copied");
        assertFalse(dockerfile.contains("COPY . ."), "the build copies what it needs, not the whole context");
        Set<String> ignored = new TreeSet<>(read(".dockerignore").lines().filter(l -> !l.startsWith("#")).toList());
        assertTrue(ignored.containsAll(List.of(".git", "**/target/", "data/")), "ignored: " + ignored);
    }

    @Test
    void shouldDocumentExactlyTheVariablesTheEntrypointReads() throws IOException {
        Set<String> read = new TreeSet<>();
        Matcher m = Pattern.compile("\\$\\{?(SLUICE_[A-Z_]+)").matcher(read("docker/entrypoint.sh"));
        while (m.find()) {
            read.add(m.group(1));
        }
        assertEquals(Set.of("SLUICE_CONFIG", "SLUICE_DATA_DIR", "SLUICE_JAVA_OPTS", "SLUICE_PASSWORD_HASH", "SLUICE_USER"), read);
        String readme = read("README.md");
        String section = readme.substring(readme.indexOf("## Run it in a container"), readme.indexOf("## Quickstart"));
        for (String variable : read) {
            assertTrue(section.contains("`" + variable + "`") || section.contains(variable + "="), "README's container section names " + variable);
        }
        assertTrue(read("Dockerfile").contains("ENTRYPOINT [\"/opt/sluice/entrypoint.sh\"]"));
    }
}
