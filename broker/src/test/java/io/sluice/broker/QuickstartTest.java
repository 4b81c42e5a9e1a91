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
 * SLF4J jars, not the broker), and run against a real broker. So is README's consume-process-publish
 * example, inside a class that gives it its {@code connection} and {@code invoiceFor}. The README's pom
 * snippet must name this build's version.
 */
class QuickstartTest {
    private static final Path README = Path.of(System.getProperty("user.dir")).getParent().resolve("README.md");

    @TempDir
    Path dataDir;
    @TempDir
    Path classes;

    @Test
    void shouldCompileAndRunTheReadmeQuickstartAsShown() throws Exception {
        compile("Quickstart", codeBlock(Files.readString(README), "## Quickstart", "java"));
        try (Broker broker = startBroker()) {
            assertEquals("hello\n", run("Quickstart", broker), "what the quickstart prints");
            assertEquals(0, broker.queues().get("greetings").snapshot().syncUninterruptibly().getNow().backlogMessages(),
                    "the quickstart acknowledged its message");
        }
    }

    @Test
    void shouldRunTheReadmeConsumeProcessPublishExampleAsShown() throws Exception {
        String example = indentedBlock(Files.readString(README), "**Consume, process, publish in one commit.**");
        compile("ConsumeProcessPublish", """
                import io.sluice.client.Connection;
                import io.sluice.client.ConnectionOptions;
                import io.sluice.client.Consumer;
                import io.sluice.client.ConsumerOptions;
                import io.sluice.client.Message;
                import io.sluice.client.Transaction;

                import java.nio.charset.StandardCharsets;
                import java.time.Duration;

                public class ConsumeProcessPublish {
                    static byte[] invoiceFor(byte[] order) {
                        return ("invoice for " + new String(order, StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8);
                    }

                    public static void main(String[] args) throws InterruptedException {
                        try (Connection connection = Connection.connect(ConnectionOptions.builder()
                                .port(Integer.parseInt(args[0])).build())) {
                """ + example.indent(12) + """
                        }
                    }
                }
                """);
        try (Broker broker = startBroker();
             Connection connection = Connection.connect(ConnectionOptions.builder().port(broker.port()).build())) {
            connection.declareQueue("orders", QueueSettings.EMPTY);
            connection.declareQueue("invoices", QueueSettings.EMPTY);
            connection.createProducer("orders", ProducerOptions.DEFAULT).send("order 17".getBytes(StandardCharsets.UTF_8));
            assertEquals("", run("ConsumeProcessPublish", broker), "the example prints nothing");
            assertEquals(0, broker.store().queue("orders").unackedMessages(), "the commit acknowledged the order");
            // The queue's count as clients see it: the store also holds the transaction's commit record (rule T5).
            assertEquals(1, broker.queues().get("invoices").messageCount(), "and published one invoice");
            try (Consumer invoices = connection.subscribe("invoices", ConsumerOptions.DEFAULT)) {
                Message invoice = invoices.receive(Duration.ofSeconds(10));
                assertNotNull(invoice, "the invoice is delivered");
                assertEquals("invoice for order 17", new String(invoice.payload(), StandardCharsets.UTF_8));
                invoice.ack();
            }
        }
    }

    private Broker startBroker() {
        return Broker.start(new ConfigLoader().load(null,
                Map.of("broker.data-dir", dataDir.toString(), "broker.port", "0", "metrics.port", "0", "storage.reserved-disk-bytes", "67108864")));
    }

    /** Compiles class {@code name} from {@code source} into {@link #classes}, against the client's classpath only. */
    private void compile(String name, String source) throws IOException {
        Path file = classes.resolve(name + ".java");
        Files.writeString(file, source);
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        StringWriter diagnostics = new StringWriter();
        try (StandardJavaFileManager files = compiler.getStandardFileManager(null, null, StandardCharsets.UTF_8)) {
            boolean compiled = compiler.getTask(diagnostics, files, null,
                    List.of("-classpath", clientClasspath(), "-d", classes.toString(), "-Xlint:all", "-Werror"),
                    null, files.getJavaFileObjects(file)).call();
            assertTrue(compiled, "the README's " + name + " compiles:\n" + diagnostics + "\n" + source);
        }
    }

    /**
     * Runs {@code mainClass} with the broker's port in a JVM of its own, as a reader would run it: only the
     * client's classpath. Returns its stdout once it exited with status 0.
     */
    private String run(String mainClass, Broker broker) throws IOException, InterruptedException {
        Path stdout = classes.resolve(mainClass + ".stdout.txt");
        Path stderr = classes.resolve(mainClass + ".stderr.txt");
        Process process = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", classes + File.pathSeparator + clientClasspath(), mainClass, Integer.toString(broker.port()))
                .redirectOutput(stdout.toFile()).redirectError(stderr.toFile()).start();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            fail(mainClass + " did not finish within 60 s; stderr:\n" + Files.readString(stderr));
        }
        assertEquals(0, process.exitValue(), mainClass + "'s exit status; stderr:\n" + Files.readString(stderr));
        return Files.readString(stdout);
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

    /** The first block indented by four spaces after {@code marker}, without the indentation. */
    static String indentedBlock(String markdown, String marker) {
        int at = markdown.indexOf(marker);
        assertTrue(at >= 0, "README has " + marker);
        StringBuilder block = new StringBuilder();
        for (String line : markdown.substring(at).lines().skip(1).toList()) {
            if (line.startsWith("    ")) {
                block.append(line.substring(4)).append('\n');
            } else if (!block.isEmpty() && !line.isBlank()) {
                break;
            }
        }
        assertTrue(!block.isEmpty(), "README has an indented block after " + marker);
        return block.toString();
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
        try (Broker broker = startBroker();
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
