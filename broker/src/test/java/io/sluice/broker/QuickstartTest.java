package io.sluice.broker;

import io.sluice.broker.config.ConfigLoader;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.tools.JavaCompiler;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import java.io.File;
import java.io.IOException;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The quickstart of README.md, exactly as README shows it: the Java block is taken out of README.md,
 * compiled with javax.tools against the client's classpath only (the client module and its Netty and
 * SLF4J jars, not the broker), and run against a real broker. The README's pom snippet must name this
 * build's version.
 */
class QuickstartTest {
    private static final Path README = Path.of(System.getProperty("user.dir")).getParent().resolve("README.md");

    @TempDir
    Path dataDir;
    @TempDir
    Path classes;

    @Test
    void shouldCompileAndRunTheReadmeQuickstartAsShown() throws Exception {
        String source = codeBlock(Files.readString(README), "## Quickstart", "java");
        Path file = classes.resolve("Quickstart.java");
        Files.writeString(file, source);
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        StringWriter diagnostics = new StringWriter();
        try (StandardJavaFileManager files = compiler.getStandardFileManager(null, null, StandardCharsets.UTF_8)) {
            boolean compiled = compiler.getTask(diagnostics, files, null,
                    List.of("-classpath", clientClasspath(), "-d", classes.toString(), "-Xlint:all", "-Werror"),
                    null, files.getJavaFileObjects(file)).call();
            assertTrue(compiled, "the README quickstart compiles:\n" + diagnostics);
        }
        try (Broker broker = Broker.start(new ConfigLoader().load(null,
                Map.of("broker.data-dir", dataDir.toString(), "broker.port", "0", "metrics.port", "0", "storage.reserved-disk-bytes", "67108864")))) {
            // A JVM of its own, as a reader would run it: only the client's classpath, and its stdout alone.
            Path stdout = classes.resolve("stdout.txt");
            Path stderr = classes.resolve("stderr.txt");
            Process quickstart = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp", classes + File.pathSeparator + clientClasspath(), "Quickstart", Integer.toString(broker.port()))
                    .redirectOutput(stdout.toFile()).redirectError(stderr.toFile()).start();
            if (!quickstart.waitFor(60, TimeUnit.SECONDS)) {
                quickstart.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                fail("the quickstart did not finish within 60 s; stderr:\n" + Files.readString(stderr));
            }
            assertEquals(0, quickstart.exitValue(), "the quickstart's exit status; stderr:\n" + Files.readString(stderr));
            assertEquals("hello\n", Files.readString(stdout), "what the quickstart prints");
            assertEquals(0, broker.queues().get("greetings").snapshot().syncUninterruptibly().getNow().backlogMessages(),
                    "the quickstart acknowledged its message");
        }
    }

    @Test
    void shouldNameThisBuildsVersionInTheReadmePomSnippet() throws Exception {
        String readme = Files.readString(README);
        String snippet = codeBlock(readme, "## Quickstart", "xml");
        String version = Connection.class.getPackage().getImplementationVersion() != null
                ? Connection.class.getPackage().getImplementationVersion() : projectVersion();
        assertTrue(snippet.contains("<artifactId>sluice-client</artifactId>") && snippet.contains("<version>" + version + "</version>"),
                "README's pom snippet names io.sluice:sluice-client:" + version + ":\n" + snippet);
        assertTrue(readme.contains("mvn -B install -DskipTests -pl client -am"), "README says how to install the client");
    }

    /** The first fenced block of this language after the heading. */
    static String codeBlock(String markdown, String heading, String language) {
        int section = markdown.indexOf(heading);
        assertTrue(section >= 0, "README has a section " + heading);
        String fence = "```" + language + "\n";
        int start = markdown.indexOf(fence, section);
        assertTrue(start >= 0, "README's " + heading + " has a " + language + " block");
        int end = markdown.indexOf("```", start + fence.length());
        return markdown.substring(start + fence.length(), end);
    }

    private static String projectVersion() throws IOException {
        String pom = Files.readString(README.resolveSibling("pom.xml"));
        int parent = pom.indexOf("<artifactId>sluice-parent</artifactId>");
        int start = pom.indexOf("<version>", parent) + "<version>".length();
        return pom.substring(start, pom.indexOf("</version>", start));
    }

    /** The client module's classes and the jars it depends on, out of this test's classpath. */
    private static String clientClasspath() {
        return Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(entry -> entry.contains(File.separator + "client" + File.separator + "target" + File.separator)
                        || entry.contains("sluice-client")
                        || entry.contains(File.separator + "io" + File.separator + "netty" + File.separator)
                        || entry.contains(File.separator + "org" + File.separator + "slf4j" + File.separator))
                .collect(Collectors.joining(File.pathSeparator));
    }

    @Test
    void shouldKeepDeliverFramesWithinTheFrameSizeTheClientAgreedTo() throws InterruptedException {
        try (Broker broker = Broker.start(new ConfigLoader().load(null,
                Map.of("broker.data-dir", dataDir.toString(), "broker.port", "0", "metrics.port", "0", "storage.reserved-disk-bytes", "67108864")));
             Connection connection = Connection.connect(ConnectionOptions.builder().port(broker.port()).maxFrameBytes(4096).build())) {
            connection.declareQueue("small", QueueSettings.EMPTY);
            Producer producer = connection.createProducer("small", ProducerOptions.DEFAULT);
            byte[] payload = new byte[1000];
            for (int i = 0; i < 100; i++) {
                payload[0] = (byte) i;
                producer.send(payload.clone());
            }
            Consumer consumer = connection.subscribe("small", ConsumerOptions.DEFAULT);
            for (int i = 0; i < 100; i++) {
                Message m = consumer.receive(Duration.ofSeconds(10));
                assertNotNull(m, "message " + i + " arrived in frames of at most 4096 bytes");
                assertEquals((byte) i, m.payload()[0]);
                m.ack();
            }
            consumer.close();
        }
    }
}
