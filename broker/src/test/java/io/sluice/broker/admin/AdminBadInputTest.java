package io.sluice.broker.admin;

import io.sluice.broker.TestAwait;
import io.sluice.broker.metrics.MetricsFixture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Bad input to the admin API and CLI gets a clear refusal and never stalls the port (found by reviews: an over-long
 * setting answered 500, a CLI number past a long's range threw, two clients announcing bodies they never sent held
 * both of the port's threads, health probes included; a --url without http:// threw out of the CLI).
 */
@Timeout(120)
class AdminBadInputTest {
    @TempDir
    Path dir;
    private MetricsFixture fixture;
    private final HttpClient http = HttpClient.newHttpClient();

    @AfterEach
    void stop() {
        if (fixture != null) {
            fixture.close();
        }
    }

    @Test
    void anOverlongStringSettingIsRefusedAsAnInvalidSetting() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        String body = "{\"deadLetterQueue\": \"" + "a".repeat(70_000) + "\"}";
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(fixture.baseUrl() + "/api/queues/jobs"))
                .PUT(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(400, r.statusCode(), r.body());
        assertTrue(r.body().contains("invalid_setting") && r.body().contains("deadLetterQueue"), r.body());
    }

    /** The last of the two would have won without a word, as in the configuration files (found by a review). */
    @Test
    void aSettingGivenTwiceIsRefusedNamingIt() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(fixture.baseUrl() + "/api/queues/jobs"))
                .PUT(HttpRequest.BodyPublishers.ofString("{\"maxDeliveries\": 3, \"maxDeliveries\": 5}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(400, r.statusCode(), r.body());
        assertTrue(r.body().contains("\"bad_json\"") && r.body().contains("the body gives the key 'maxDeliveries' twice;"
                + " give each key once"), r.body());
    }

    @Test
    void aBodyOverTheCapIsRefusedWithoutBeingRead() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        byte[] body = new byte[AdminApi.MAX_BODY_BYTES + 1];
        Arrays.fill(body, (byte) ' ');
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(fixture.baseUrl() + "/api/queues/jobs"))
                .PUT(HttpRequest.BodyPublishers.ofByteArray(body)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(413, r.statusCode(), r.body());
        assertTrue(r.body().contains("body_too_large"), r.body());
    }

    @Test
    void clientsHoldingRequestBodiesOpenDoNotStallTheHealthProbe() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        URI base = URI.create(fixture.baseUrl());
        try (Socket a = new Socket(base.getHost(), base.getPort()); Socket b = new Socket(base.getHost(), base.getPort())) {
            for (Socket s : new Socket[] {a, b}) {
                OutputStream out = s.getOutputStream();
                out.write(("PUT /api/queues/x HTTP/1.1\r\nHost: " + base.getHost() + ":" + base.getPort()
                        + "\r\nContent-Length: 1000000\r\n\r\n{").getBytes(StandardCharsets.US_ASCII));
                out.flush();
            }
            TestAwait.until("two of the port's threads serve the requests whose bodies never come", Duration.ofSeconds(10),
                    () -> httpThreadsIn("readNBytes", "readAllBytes", "drain") >= 2);
            HttpResponse<String> live = http.send(HttpRequest.newBuilder(URI.create(fixture.baseUrl() + "/health/live"))
                    .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, live.statusCode());
        }
    }

    /** Threads of the admin port whose stack is in one of {@code methods} (reading a request's body). */
    private static long httpThreadsIn(String... methods) {
        return Thread.getAllStackTraces().entrySet().stream()
                .filter(e -> e.getKey().getName().startsWith("sluice-http-") && !e.getKey().getName().contains("scheduler"))
                .filter(e -> Arrays.stream(e.getValue()).anyMatch(f -> Arrays.asList(methods).contains(f.getMethodName())))
                .count();
    }

    @Test
    void theCliRefusesANumberPastALongsRangeAsUsage() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = AdminCli.run(new String[] {"--url", "http://127.0.0.1:1", "declare", "q", "maxDeliveries=99999999999999999999"},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        String said = err.toString(StandardCharsets.UTF_8);
        assertEquals(2, status, said);
        assertTrue(said.contains("maxDeliveries") && said.contains("99999999999999999999"), said);
    }

    /** Found by a review: a --url the HTTP client cannot use threw IllegalArgumentException out of main (exit 1). */
    @Test
    void theCliRefusesAUrlItCannotUseAsUsage() {
        Map<String, String> refused = Map.of(
                "localhost:7673", "does not start with http:// or https://",
                "", "does not start with http:// or https://",
                "ftp://127.0.0.1:7673", "has the scheme 'ftp'",
                "http:///x", "names no host",
                "http://my_broker:7673", "has 'my_broker:7673' where the host goes",
                "http://127.0.0.1:7673/?x=1", "has a query or fragment",
                "http://127.0.0.1:7673 /", "is not a valid URL");
        refused.forEach((url, why) -> {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int status = AdminCli.run(new String[] {"--url", url, "queues"},
                    new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
            String said = err.toString(StandardCharsets.UTF_8);
            assertEquals(2, status, url + ": " + said);
            assertTrue(said.startsWith("sluice admin: --url '" + url + "' " + why), url + ": " + said);
            assertTrue(said.contains("\n" + AdminCli.USAGE + "\n"), said);
        });
    }
}
