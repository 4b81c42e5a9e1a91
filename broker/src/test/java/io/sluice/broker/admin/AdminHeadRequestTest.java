package io.sluice.broker.admin;

import io.sluice.broker.metrics.MetricsFixture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The JDK's HTTP server logs a WARNING through java.util.logging (unformatted, not rate-limited) each time a HEAD request
 * is answered with a content length, which /metrics, /health/* and the API did: anyone reaching the port could write two
 * log lines per request.
 */
@Timeout(120)
class AdminHeadRequestTest {
    @TempDir
    Path dir;

    @Test
    void aHeadRequestIsAnsweredWithoutABodyAndLogsNothing() throws Exception {
        List<LogRecord> records = new ArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord record) {
                synchronized (records) {
                    records.add(record);
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger server = Logger.getLogger("com.sun.net.httpserver");
        server.addHandler(capture);
        HttpClient http = HttpClient.newHttpClient();
        try (MetricsFixture fixture = new MetricsFixture(dir.resolve("data"), Map.of())) {
            for (String path : List.of("/metrics", "/health/live", "/health/ready", "/api/queues", "/console/")) {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(fixture.baseUrl() + path))
                        .method("HEAD", HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
                assertTrue(r.statusCode() == 200 || r.statusCode() == 405, path + ": " + r.statusCode());
                assertEquals("", r.body(), path);
            }
            // The same connection still serves a GET after the HEADs: no answer left bytes behind.
            assertEquals(200, http.send(HttpRequest.newBuilder(URI.create(fixture.baseUrl() + "/health/live")).build(),
                    HttpResponse.BodyHandlers.ofString()).statusCode());
        } finally {
            server.removeHandler(capture);
        }
        synchronized (records) {
            assertEquals(List.of(), records.stream().filter(r -> r.getLevel().intValue() >= Level.WARNING.intValue())
                    .map(LogRecord::getMessage).toList());
        }
    }
}
