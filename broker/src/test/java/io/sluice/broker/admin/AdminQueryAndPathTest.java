package io.sluice.broker.admin;

import io.sluice.broker.metrics.MetricsFixture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The admin API read only a request's path: a query string was ignored, so a DELETE or purge meant to be conditional
 * ({@code ?if-empty=true}, {@code ?dryRun=true}) did its whole work, and a setting given in the query was dropped. Paths
 * with segments no resource has answered as the resource's list, and the JDK's server matches a context by prefix.
 */
@Timeout(120)
class AdminQueryAndPathTest {
    @TempDir
    Path dir;
    private MetricsFixture fixture;
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeEach
    void start() {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
    }

    @AfterEach
    void stop() {
        fixture.close();
    }

    private HttpResponse<String> send(String method, String path, String body) throws Exception {
        HttpRequest.BodyPublisher publisher = body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body);
        return http.send(HttpRequest.newBuilder(URI.create(fixture.baseUrl() + path)).method(method, publisher).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aQueryStringIsRefusedNamingItsParameterAndNothingIsDone() throws Exception {
        assertEquals(200, send("PUT", "/api/queues/keepme", "{}").statusCode());

        HttpResponse<String> delete = send("DELETE", "/api/queues/keepme?if-empty=true", null);
        assertEquals(400, delete.statusCode(), delete.body());
        assertTrue(delete.body().contains("\"bad_request\"") && delete.body().contains("'if-empty'"), delete.body());
        assertEquals(200, send("GET", "/api/queues/keepme", null).statusCode(), "the queue is still there");

        HttpResponse<String> purge = send("POST", "/api/queues/keepme/purge?dryRun=true", null);
        assertEquals(400, purge.statusCode(), purge.body());
        assertTrue(purge.body().contains("'dryRun'"), purge.body());

        HttpResponse<String> declare = send("PUT", "/api/queues/qs1?maxDeliveries=3", "{}");
        assertEquals(400, declare.statusCode(), declare.body());
        assertTrue(declare.body().contains("'maxDeliveries'"), declare.body());
        assertEquals(404, send("GET", "/api/queues/qs1", null).statusCode(), "nothing was declared");

        HttpResponse<String> list = send("GET", "/api/queues?limit=1", null);
        assertEquals(400, list.statusCode(), list.body());
    }

    @Test
    void aPathNoResourceHasIsNotFound() throws Exception {
        for (String path : List.of("/api/consumers/x", "/api/producers/x/y", "/api/connections/a/b", "/api/connections/",
                "/api/queues/", "/api/queues//x", "/api")) {
            HttpResponse<String> r = send("GET", path, null);
            assertEquals(404, r.statusCode(), path + ": " + r.body());
            assertTrue(r.body().contains("\"not_found\""), path + ": " + r.body());
            assertEquals("application/json", r.headers().firstValue("Content-Type").orElse("").split(";")[0], path);
        }
        HttpResponse<String> post = send("POST", "/api", "{}");
        assertEquals(404, post.statusCode(), post.body());
        assertTrue(post.body().contains("\"not_found\""), post.body());
        for (String path : List.of("/metricsfoo", "/metrics/", "/health/readyzzz", "/health/livex")) {
            assertEquals(404, send("GET", path, null).statusCode(), path);
        }
        assertEquals(200, send("GET", "/metrics", null).statusCode());
        assertEquals(200, send("GET", "/health/live", null).statusCode());
        assertEquals(200, send("GET", "/api/connections", null).statusCode());
        assertEquals(200, send("GET", "/api/consumers", null).statusCode());
    }
}
