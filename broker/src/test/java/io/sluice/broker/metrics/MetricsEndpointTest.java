package io.sluice.broker.metrics;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A real broker and client; the Prometheus endpoint is scraped and its figures checked exactly. */
@Timeout(120)
class MetricsEndpointTest {
    /** Standard names of the JVM and process binders (Micrometer's own), allowed beside sluice_. */
    private static final Pattern STANDARD = Pattern.compile("^(jvm_|process_|system_).*");

    @TempDir
    Path dir;
    private MetricsFixture fixture;

    @AfterEach
    void stop() {
        if (fixture != null) {
            fixture.close();
        }
    }

    @Test
    void shouldReportExactQueueFiguresAfterPublishingAndAcking() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        fixture.publishAndAck("orders", 10, 4);

        Map<String, Double> s = MetricsFixture.parse(fixture.scrapeText());
        String q = "{queue=\"orders\"}";
        assertEquals(6.0, s.get(MetricNames.QUEUE_BACKLOG_MESSAGES + q), "backlog");
        assertEquals(10.0, s.get(MetricNames.QUEUE_PUBLISHED + q), "published");
        assertEquals(10.0, s.get(MetricNames.QUEUE_CONFIRMED + q), "confirmed");
        assertEquals(4.0, s.get(MetricNames.QUEUE_ACKED + q), "acked");
        // The consumer granted more credit as it acked; what it held when it closed was taken back.
        double delivered = s.get(MetricNames.QUEUE_DELIVERED + q);
        assertTrue(delivered >= 4, "delivered " + delivered);
        assertEquals(delivered - 4, s.get(MetricNames.QUEUE_REDELIVERED + q), "redelivered = delivered - acked");
        assertEquals(6.0, s.get(MetricNames.QUEUE_READY_MESSAGES + q), "ready");
        assertEquals(0.0, s.get(MetricNames.QUEUE_UNACKED_MESSAGES + q), "unacked");
        assertEquals(0.0, s.get(MetricNames.QUEUE_CONSUMERS + q), "consumers after close");
        assertEquals(0.0, s.get(MetricNames.QUEUE_FLOW_STATE + q), "flow state free");
        assertTrue(s.get(MetricNames.QUEUE_BACKLOG_BYTES + q) > 0, "backlog bytes");
        assertTrue(s.get(MetricNames.QUEUE_OLDEST_UNACKED_AGE_SECONDS + q) >= 0, "oldest unacked age");
        assertTrue(s.get(MetricNames.QUEUE_SYNCS + q) > 0, "durability always syncs");
        assertEquals(1.0, s.get(MetricNames.QUEUE_INFO + "{durability=\"always\",overflow_policy=\"block\",queue=\"orders\"}"));
        assertEquals(1.0, s.get(MetricNames.BROKER_READY));
        assertTrue(s.get(MetricNames.FRAMES_RECEIVED) > 0 && s.get(MetricNames.FRAMES_SENT) > 0);
        assertTrue(s.get(MetricNames.RECEIVED_BYTES) > 0 && s.get(MetricNames.SENT_BYTES) > 0);
    }

    @Test
    void shouldRecordLatenciesOncePerFrameAndTheOldestReadyAge() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        fixture.publishAndAck("orders", 10, 4);
        String q = "{queue=\"orders\"}";
        // Each send waits for its confirm, so 10 frames; the 4 acks go in 1 to 4 ACK frames.
        Map<String, Double> s = fixture.awaitScrape("ready messages older than 10 ms",
                m -> m.getOrDefault(MetricNames.QUEUE_OLDEST_READY_AGE_SECONDS + q, 0.0) >= 0.010);
        String confirm = MetricNames.QUEUE_PUBLISH_CONFIRM_SECONDS;
        double confirms = s.get(confirm + "_count" + q);
        assertTrue(confirms >= 1 && confirms <= 10, "confirm frames " + confirms);
        assertEquals(confirms, s.get(confirm + "_bucket{queue=\"orders\",le=\"+Inf\"}"), "+Inf bucket = count");
        assertTrue(s.get(confirm + "_sum" + q) > 0, "confirm latency sum");
        assertTrue(s.get(confirm + "_bucket{queue=\"orders\",le=\"10.0\"}") == confirms, "every confirm within 10 s");
        String ack = MetricNames.QUEUE_PUBLISH_ACK_SECONDS;
        double acks = s.get(ack + "_count" + q);
        assertTrue(acks >= 1 && acks <= 4, "ack frames " + acks);
        assertEquals(acks, s.get(ack + "_bucket{queue=\"orders\",le=\"+Inf\"}"), "+Inf bucket = count");
        // Messages 4..9 are ready (some taken back from the closed consumer): the oldest ready is the oldest unacked.
        assertEquals(s.get(MetricNames.QUEUE_OLDEST_UNACKED_AGE_SECONDS + q), s.get(MetricNames.QUEUE_OLDEST_READY_AGE_SECONDS + q),
                "oldest ready = oldest unacked when nothing is out with a consumer");
        assertEquals(0.0, s.get(MetricNames.QUEUE_BLOCKED_SECONDS + q), "never blocked");
    }

    @Test
    void shouldReportStalledConsumersAndTimeBlocked() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        String q = "{queue=\"held\"}";
        String noCredit = MetricNames.QUEUE_CONSUMERS_STALLED + "{queue=\"held\",reason=\"no_credit\"}";
        String notWritable = MetricNames.QUEUE_CONSUMERS_STALLED + "{queue=\"held\",reason=\"not_writable\"}";
        try (io.sluice.client.Connection c = fixture.connect()) {
            c.declareQueue("held", io.sluice.protocol.QueueSettings.builder()
                    .set(io.sluice.protocol.QueueSettings.QUOTA_HARD_MESSAGES, 2).build());
            try (io.sluice.client.Producer p = c.createProducer("held", io.sluice.client.ProducerOptions.DEFAULT)) {
                p.send("a".getBytes(StandardCharsets.UTF_8));
                p.send("b".getBytes(StandardCharsets.UTF_8));
            }
            Map<String, Double> blocked = fixture.awaitScrape("blocked for 50 ms",
                    m -> m.getOrDefault(MetricNames.QUEUE_BLOCKED_SECONDS + q, 0.0) >= 0.050);
            assertEquals(2.0, blocked.get(MetricNames.QUEUE_FLOW_STATE + q), "blocked at the hard quota");
            assertEquals(0.0, blocked.get(noCredit), "no consumer yet");
            try (io.sluice.client.Consumer consumer = c.subscribe("held", io.sluice.client.ConsumerOptions.DEFAULT.withCredit(1))) {
                io.sluice.client.Message m = consumer.receive(java.time.Duration.ofSeconds(10));
                assertTrue(m != null, "first message delivered");
                Map<String, Double> s = fixture.awaitScrape("one consumer out of credit", x -> x.getOrDefault(noCredit, -1.0) == 1.0);
                assertEquals(0.0, s.get(notWritable), "its connection is writable");
                m.ack();
                fixture.awaitScrape("unblocked", x -> x.getOrDefault(MetricNames.QUEUE_FLOW_STATE + q, -1.0) == 0.0);
            }
        }
        double afterUnblock = MetricsFixture.parse(fixture.scrapeText()).get(MetricNames.QUEUE_BLOCKED_SECONDS + q);
        Thread.sleep(100); // the counter must stand still while the queue is free, not keep adding the wall clock
        assertEquals(afterUnblock, MetricsFixture.parse(fixture.scrapeText()).get(MetricNames.QUEUE_BLOCKED_SECONDS + q));
    }

    @Test
    void shouldExposeEveryNameOfMetricNamesAndOnlySluiceOrStandardNames() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        fixture.publishAndAck("orders", 3, 1);
        String text = fixture.scrapeText();
        Set<String> names = MetricsFixture.parse(text).keySet().stream().map(MetricsFixture::nameOf)
                .collect(Collectors.toCollection(TreeSet::new));
        for (String expected : MetricNames.ALL) {
            assertTrue(names.contains(expected), expected + " is missing from the scrape; names: " + names);
        }
        for (String histogram : MetricNames.HISTOGRAMS) {
            for (String suffix : List.of("_bucket", "_sum", "_count", "_max")) {
                assertTrue(names.contains(histogram + suffix), histogram + suffix + " is missing from the scrape; names: " + names);
            }
        }
        for (String name : names) {
            assertTrue(name.startsWith("sluice_") || STANDARD.matcher(name).matches(), "unexpected metric name " + name);
        }
        assertTrue(names.contains("jvm_memory_used_bytes") && names.contains("process_uptime_seconds")
                && names.contains("jvm_threads_live_threads"), "JVM and process binders: " + names);
    }

    @Test
    void shouldCountProtocolErrorsByCodeAndRemoveMetersOfDeletedQueues() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        fixture.publishAndAck("gone", 1, 0);
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", fixture.broker.port())) {
            // A frame of an unknown type before HELLO: the broker closes with an error code.
            socket.getOutputStream().write(new byte[] {0, 0, 0, 8, 0x7f, 0x7f, 0, 0, 0, 0, 0, 0});
            socket.getOutputStream().flush();
            socket.setSoTimeout(5000);
            while (socket.getInputStream().read() >= 0) {
                // drain until the broker closes
            }
        } catch (java.net.SocketException ignored) {
            // reset by the broker after its CLOSE: also fine
        }
        fixture.awaitScrape("a protocol error", s -> s.entrySet().stream()
                .anyMatch(e -> e.getKey().startsWith(MetricNames.PROTOCOL_ERRORS + "{") && e.getValue() >= 1));
        fixture.broker.queues().delete("gone");
        Map<String, Double> s = MetricsFixture.parse(fixture.scrapeText());
        assertTrue(s.keySet().stream().noneMatch(k -> k.contains("queue=\"gone\"")), "meters of the deleted queue remain");
    }

    @Test
    void shouldAnswerHealthProbes() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        assertEquals(200, fixture.get("/health/live").statusCode());
        HttpResponse<String> ready = fixture.get("/health/ready");
        assertEquals(200, ready.statusCode(), ready.body());
    }

    @Test
    void shouldPassPromtoolCheckMetrics() throws Exception {
        String promtool = onPath("promtool");
        if (promtool == null) {
            System.err.println("SKIPPED MetricsEndpointTest.shouldPassPromtoolCheckMetrics: promtool is not on PATH"
                    + " (install the Debian package prometheus, as .ci/run does)");
            Assumptions.abort("promtool is not on PATH; install the Debian package prometheus");
        }
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        fixture.publishAndAck("orders", 5, 2);
        Path scraped = dir.resolve("scrape.txt");
        Files.writeString(scraped, fixture.scrapeText());
        Process p = new ProcessBuilder(promtool, "check", "metrics").redirectInput(scraped.toFile())
                .redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "promtool did not finish");
        List<String> problems = output.lines().filter(l -> !l.isBlank()).toList();
        assertEquals(0, p.exitValue(), "promtool check metrics: " + output);
        assertTrue(problems.isEmpty(), "promtool check metrics found problems:\n" + output);
    }

    static String onPath(String command) {
        for (String d : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            File f = new File(d, command);
            if (f.canExecute()) {
                return f.getPath();
            }
        }
        return null;
    }
}
