package io.sluice.broker.security;

import ch.qos.logback.classic.Level;
import io.sluice.broker.Broker;
import io.sluice.broker.LogCapture;
import io.sluice.broker.config.ConfigException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Protected mode for the admin port: reachable from other hosts, it needs users or an explicit, logged opt-in. */
class AdminExposureTest {
    @TempDir
    Path dir;

    private static final Map<String, String> EXPOSED = Map.of("metrics.listen-address", "0.0.0.0");

    private static HttpResponse<String> put(Broker broker, String queue) throws Exception {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + broker.metricsPort()
                        + "/api/queues/" + queue)).timeout(Duration.ofSeconds(30)).PUT(HttpRequest.BodyPublishers.ofString("{}")).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void adminPortOnANonLoopbackAddressWithoutUsersIsRefused() {
        ConfigException e = assertThrows(ConfigException.class, () -> SecurityFixture.config(dir, null, EXPOSED));
        assertTrue(e.getMessage().contains("metrics.listen-address 0.0.0.0 is not a loopback address and auth.users is empty"),
                e.getMessage());
        assertTrue(e.getMessage().contains("metrics.allow-anonymous-remote: true"), e.getMessage());
    }

    @Test
    void adminPortWithUsersStartsAndAsksForCredentials() throws Exception {
        try (Broker broker = SecurityFixture.start(dir, SecurityFixture.usersYaml(), EXPOSED)) {
            assertEquals(401, put(broker, "q").statusCode());
            assertTrue(broker.queues().get("q") == null);
        }
    }

    @Test
    void metricsDisabledNeedsNoCheck() throws Exception {
        Map<String, String> overrides = new java.util.HashMap<>(EXPOSED);
        overrides.put("metrics.enabled", "false");
        try (Broker broker = SecurityFixture.start(dir, null, overrides)) {
            assertEquals(-1, broker.metricsPort());
        }
    }

    @Test
    void explicitAnonymousRemoteAdminStartsAndWarnsAtEveryStart() throws Exception {
        try (LogCapture log = LogCapture.of(ListenerExposure.class)) {
            Map<String, String> overrides = new java.util.HashMap<>(EXPOSED);
            overrides.put("metrics.allow-anonymous-remote", "true");
            for (int start = 0; start < 2; start++) {
                try (Broker broker = SecurityFixture.start(dir, null, overrides)) {
                    assertEquals(200, put(broker, "q" + start).statusCode(), "anonymous requests were allowed knowingly");
                }
            }
            assertEquals(2, log.count(Level.WARN, "admin API", "metrics.allow-anonymous-remote"));
        }
    }
}
