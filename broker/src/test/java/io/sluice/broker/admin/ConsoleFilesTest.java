package io.sluice.broker.admin;

import io.sluice.broker.metrics.MetricsFixture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The console's files on the admin port: what is served, with which headers, and nothing else. */
@Timeout(60)
class ConsoleFilesTest {
    @TempDir
    Path dir;
    private MetricsFixture fixture;
    private final HttpClient http = HttpClient.newHttpClient(); // follows no redirects

    @AfterEach
    void stop() {
        if (fixture != null) {
            fixture.close();
        }
    }

    private HttpResponse<String> get(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(fixture.baseUrl() + path)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void shouldServeThePageItsScriptAndStyleWithHeadersThatForbidFramingAndForeignScripts() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        HttpResponse<String> root = get("/");
        assertEquals(302, root.statusCode());
        assertEquals("/console/", root.headers().firstValue("Location").orElse(""));
        HttpResponse<String> page = get("/console/");
        assertEquals(200, page.statusCode());
        assertTrue(page.headers().firstValue("Content-Type").orElse("").startsWith("text/html"));
        assertTrue(page.body().contains("<script src=\"console.js\""), page.body());
        assertEquals("DENY", page.headers().firstValue("X-Frame-Options").orElse(""));
        assertTrue(page.headers().firstValue("Content-Security-Policy").orElse("").contains("default-src 'self'"));
        assertTrue(get("/console/console.js").headers().firstValue("Content-Type").orElse("").startsWith("text/javascript"));
        assertTrue(get("/console/console.css").headers().firstValue("Content-Type").orElse("").startsWith("text/css"));
    }

    @Test
    void shouldAnswer404ForAnyOtherPathAndNotReachOtherResources() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        for (String path : new String[] {"/console/sluice.yaml", "/console/../sluice.yaml", "/console/%2e%2e/sluice.yaml",
                "/sluice.yaml", "/console/sub/index.html"}) {
            HttpResponse<String> r = get(path);
            assertEquals(404, r.statusCode(), path + ": " + r.body());
            assertTrue(r.body().contains("/console/"), r.body());
        }
        assertEquals(200, get("/health/live").statusCode(), "the other paths keep their handlers");
    }
}
