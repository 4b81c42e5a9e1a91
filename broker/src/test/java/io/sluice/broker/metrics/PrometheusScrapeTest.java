package io.sluice.broker.metrics;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.broker.TestPorts;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A real Prometheus scrapes the broker: the backlog it stores for the queue equals what the test left.
 * Needs /usr/bin/prometheus (the Debian package prometheus, which .ci/run installs); skipped loudly without it.
 */
@Tag("slow")
@Timeout(180)
class PrometheusScrapeTest {
    private static final Path PROMETHEUS = Path.of("/usr/bin/prometheus");

    @TempDir
    Path dir;
    private MetricsFixture fixture;
    private Process prometheus;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final ObjectMapper json = new ObjectMapper();

    @AfterEach
    void stop() throws Exception {
        if (prometheus != null) {
            prometheus.destroy();
            if (!prometheus.waitFor(10, TimeUnit.SECONDS)) {
                prometheus.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        if (fixture != null) {
            fixture.close();
        }
    }

    @Test
    void shouldBeScrapedByARealPrometheus() throws Exception {
        if (!Files.isExecutable(PROMETHEUS)) {
            System.err.println("SKIPPED PrometheusScrapeTest: " + PROMETHEUS + " is missing (apt-get install prometheus, as .ci/run does)");
            Assumptions.abort(PROMETHEUS + " is missing; install the Debian package prometheus");
        }
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        fixture.publishAndAck("scraped", 7, 2);

        int webPort = TestPorts.free();
        Path config = dir.resolve("prometheus.yml");
        Files.writeString(config, "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                + "scrape_configs:\n  - job_name: sluice\n    static_configs:\n"
                + "      - targets: ['127.0.0.1:" + fixture.broker.metricsPort() + "']\n");
        Path log = dir.resolve("prometheus.log");
        prometheus = new ProcessBuilder(PROMETHEUS.toString(), "--config.file=" + config,
                "--storage.tsdb.path=" + dir.resolve("tsdb"), "--web.listen-address=127.0.0.1:" + webPort)
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        String api = "http://127.0.0.1:" + webPort + "/api/v1/query?query=";

        String up = awaitValue(api, "up{job=\"sluice\"}", "1", log);
        assertEquals("1", up);
        String backlog = awaitValue(api, "sluice_queue_backlog_messages{queue=\"scraped\"}", "5", log);
        assertEquals("5", backlog);
        assertEquals("7", awaitValue(api, "sluice_queue_published_messages_total{queue=\"scraped\"}", "7", log));
    }

    /** Polls an instant query until its first value equals {@code wanted} (deadline 60 s); returns the last value seen. */
    private String awaitValue(String api, String query, String wanted, Path log) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        String last = null;
        while (System.nanoTime() < deadline) {
            if (!prometheus.isAlive()) {
                throw new AssertionError("prometheus exited with " + prometheus.exitValue() + ":\n" + Files.readString(log));
            }
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(api
                        + URLEncoder.encode(query, StandardCharsets.UTF_8))).timeout(Duration.ofSeconds(5)).build(),
                        HttpResponse.BodyHandlers.ofString());
                JsonNode result = json.readTree(r.body()).path("data").path("result");
                if (result.size() > 0) {
                    last = result.get(0).path("value").get(1).asText();
                    if (last.equals(wanted)) {
                        return last;
                    }
                }
            } catch (java.io.IOException e) {
                // not listening yet
            }
            Thread.sleep(200);
        }
        throw new AssertionError("query " + query + " did not reach " + wanted + " within 60 s (last " + last + "); log:\n"
                + Files.readString(log));
    }
}
