package io.sluice.broker.admin;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.broker.metrics.MetricsFixture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Every 405 names the methods its path takes in an {@code Allow} header, as HTTP requires (RFC 9110, 15.5.6). */
@Timeout(120)
class AdminMethodNotAllowedTest {
    @TempDir
    Path dir;

    private record Case(String method, String path, String allow) {
    }

    @Test
    void every405CarriesAllowWithTheMethodsOfItsPath() throws Exception {
        ObjectMapper json = new ObjectMapper();
        try (MetricsFixture fixture = new MetricsFixture(dir.resolve("data"), Map.of())) {
            assertEquals(200, fixture.request("PUT", "/api/queues/q", "{}", null).statusCode());
            for (Case c : List.of(
                    new Case("POST", "/api/queues", "GET, HEAD"),
                    new Case("PATCH", "/api/queues/q", "GET, HEAD, PUT, DELETE"),
                    new Case("GET", "/api/queues/q/purge", "POST"),
                    new Case("DELETE", "/api/queues/q/digest", "GET, HEAD"),
                    new Case("PUT", "/api/connections", "GET, HEAD"),
                    new Case("GET", "/api/connections/7", "DELETE"),
                    new Case("POST", "/api/consumers", "GET, HEAD"),
                    new Case("POST", "/api/producers", "GET, HEAD"),
                    new Case("DELETE", "/api/cluster", "GET, HEAD"),
                    new Case("GET", "/api/cluster/leader", "POST"),
                    new Case("GET", "/api/cluster/nodes", "POST"),
                    new Case("GET", "/api/cluster/nodes/2", "DELETE"),
                    new Case("DELETE", "/metrics", "GET, HEAD"),
                    new Case("POST", "/console/", "GET, HEAD"),
                    new Case("PUT", "/console/console.js", "GET, HEAD"))) {
                HttpResponse<String> r = fixture.request(c.method, c.path, null, null);
                String what = c.method + " " + c.path + ": " + r.body();
                assertEquals(405, r.statusCode(), what);
                assertEquals(c.allow, r.headers().firstValue("Allow").orElse(null), what);
                if (c.path.startsWith("/api/")) { // the API answers JSON; /metrics and the console plain text
                    assertEquals("method_not_allowed", json.readTree(r.body()).path("error").asText(), what);
                }
            }
        }
    }
}
