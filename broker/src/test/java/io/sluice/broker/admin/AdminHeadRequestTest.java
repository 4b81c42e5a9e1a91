package io.sluice.broker.admin;

import io.sluice.broker.metrics.MetricsFixture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * HEAD is GET without the body (docs/operations.md, "The admin API"): every path that answers GET answers HEAD with
 * GET's status and headers, Content-Length included, and no body. The JDK's HTTP server logs a WARNING through
 * java.util.logging (unformatted, not rate-limited) each time a HEAD request is answered with a length given to
 * sendResponseHeaders, so none may be.
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
                assertEquals(200, r.statusCode(), path);
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

    /**
     * Over a raw socket, so that the bytes after HEAD's headers are seen: each HEAD is followed on the same connection by
     * a GET, whose status line must come right after HEAD's blank line. Paths whose body does not change between two
     * requests are compared byte for byte with GET's Content-Length; /metrics and the queue figures change (a scrape's
     * own counters, the rates' interval), so there HEAD's length need only be one.
     */
    @Test
    void everyGetPathAnswersHeadWithGetsStatusAndHeadersAndNoBody() throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        try (MetricsFixture fixture = new MetricsFixture(dir.resolve("data"), Map.of())) {
            assertEquals(200, fixture.request("PUT", "/api/queues/q", "{}", null).statusCode());
            List<String> stable = List.of("/health/live", "/health/ready", "/console/", "/console/console.js",
                    "/api/queues/q/digest", "/api/connections", "/api/consumers", "/api/producers", "/api/cluster",
                    "/api/queues/nope", "/console/nope", "/");
            List<String> changing = List.of("/metrics", "/api/queues", "/api/queues/q");
            List<String> all = new ArrayList<>(stable);
            all.addAll(changing);
            for (String path : all) {
                HttpResponse<byte[]> get = http.send(HttpRequest.newBuilder(URI.create(fixture.baseUrl() + path)).GET().build(),
                        HttpResponse.BodyHandlers.ofByteArray());
                RawAnswer head = headThenGet(fixture.broker.metricsPort(), path);
                assertEquals(get.statusCode(), head.status, path + ": " + head.headers);
                assertEquals(get.headers().firstValue("content-type").orElse(null), head.headers.get("content-type"), path);
                assertEquals(get.headers().firstValue("location").orElse(null), head.headers.get("location"), path);
                assertTrue(head.afterHeaders.startsWith("HTTP/1.1 200 "), path + ": HEAD sent a body: " + head.afterHeaders);
                if (stable.contains(path)) {
                    assertEquals(String.valueOf(get.body().length), head.headers.get("content-length"), path);
                } else {
                    assertTrue(Long.parseLong(head.headers.getOrDefault("content-length", "0")) > 0, path + ": " + head.headers);
                }
            }
        }
    }

    private record RawAnswer(int status, Map<String, String> headers, String afterHeaders) {
    }

    /** HEAD {@code path}, then GET /health/live on the same connection; the first answer's head and all that follows it. */
    private static RawAnswer headThenGet(int port, String path) throws IOException {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(10_000);
            String host = "Host: 127.0.0.1:" + port + "\r\n";
            socket.getOutputStream().write(("HEAD " + path + " HTTP/1.1\r\n" + host + "\r\n"
                    + "GET /health/live HTTP/1.1\r\n" + host + "Connection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            ByteArrayOutputStream read = new ByteArrayOutputStream();
            InputStream in = socket.getInputStream();
            byte[] buffer = new byte[8192];
            for (int n; (n = in.read(buffer)) > 0; ) {
                read.write(buffer, 0, n);
            }
            String text = read.toString(StandardCharsets.ISO_8859_1);
            int end = text.indexOf("\r\n\r\n");
            assertTrue(end > 0, "no complete answer to HEAD " + path + ": " + text);
            String[] lines = text.substring(0, end).split("\r\n");
            Map<String, String> headers = new LinkedHashMap<>();
            for (int i = 1; i < lines.length; i++) {
                int colon = lines[i].indexOf(':');
                headers.put(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).trim());
            }
            return new RawAnswer(Integer.parseInt(lines[0].split(" ")[1]), headers, text.substring(end + 4));
        }
    }
}
