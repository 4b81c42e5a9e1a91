package io.sluice.broker.admin;

import io.sluice.broker.auth.PasswordHasher;
import io.sluice.broker.config.ConfigException;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.broker.metrics.MetricNames;
import io.sluice.broker.metrics.MetricsFixture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static io.sluice.broker.metrics.MetricsFixture.basic;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Who may read /metrics ({@code metrics.scrape-access}) and the health probes, with users configured. */
@Timeout(120)
class MetricsAccessTest {
    private static final String HASH = PasswordHasher.hash("s3cret".toCharArray());
    @TempDir
    Path dir;
    private MetricsFixture fixture;

    @AfterEach
    void stop() {
        if (fixture != null) {
            fixture.close();
        }
    }

    private Path usersFile() throws Exception {
        Path config = dir.resolve("sluice.yaml");
        Files.writeString(config, """
                auth:
                  users:
                    - name: limited
                      password-hash: "%1$s"
                      permissions:
                        - queues: "A*"
                          actions: [publish, consume, manage]
                    - name: scraper
                      password-hash: "%1$s"
                      permissions:
                        - queues: "*"
                          actions: [monitor]
                """.formatted(HASH));
        return config;
    }

    private int status(String path, String authorization) throws Exception {
        return fixture.request("GET", path, null, authorization).statusCode();
    }

    @Test
    void byDefaultTheScrapeNeedsAUserWhoMaySeeEveryQueue() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), usersFile(), Map.of());
        assertEquals(401, status("/metrics", null));
        assertEquals(401, status("/metrics", basic("scraper", "wrong")));
        HttpResponse<String> limited = fixture.request("GET", "/metrics", null, basic("limited", "s3cret"));
        assertEquals(403, limited.statusCode(), limited.body());
        assertTrue(limited.body().contains("user 'limited' may not read /metrics"), limited.body());
        HttpResponse<String> scrape = fixture.request("GET", "/metrics", null, basic("scraper", "s3cret"));
        assertEquals(200, scrape.statusCode(), scrape.body());
        assertTrue(scrape.body().contains(MetricNames.BROKER_READY), "the scrape has the broker's figures");
        assertEquals(200, status("/health/live", null), "health probes need no credentials");
        assertEquals(200, status("/health/ready", null), "health probes need no credentials");
    }

    @Test
    void openScrapeAccessNeedsNoCredentialsButTheApiStillDoes() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), usersFile(), Map.of("metrics.scrape-access", "open"));
        HttpResponse<String> scrape = fixture.get("/metrics");
        assertEquals(200, scrape.statusCode(), scrape.body());
        assertTrue(scrape.body().contains(MetricNames.BROKER_READY));
        assertEquals(401, status("/api/queues", null));
    }

    /**
     * An open scrape takes requests without credentials, but credentials sent are checked as everywhere on the port: a
     * scraper configured with a wrong password is told so (401) rather than served as if it had logged in, and a header
     * that is no Basic credentials is 400. Good credentials of any user are served: the scrape is open.
     */
    @Test
    void openScrapeAccessChecksTheCredentialsARequestSends() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), usersFile(), Map.of("metrics.scrape-access", "open"));
        HttpResponse<String> wrong = fixture.request("GET", "/metrics", null, basic("scraper", "wrong"));
        assertEquals(401, wrong.statusCode(), wrong.body());
        assertEquals(401, status("/metrics", basic("nobody", "s3cret")));
        HttpResponse<String> malformed = fixture.request("GET", "/metrics", null, "Basic !!!");
        assertEquals(400, malformed.statusCode(), malformed.body());
        assertTrue(malformed.body().contains("takes 'Authorization: Basic"), malformed.body());
        HttpResponse<String> limited = fixture.request("GET", "/metrics", null, basic("limited", "s3cret"));
        assertEquals(200, limited.statusCode(), limited.body());
        assertTrue(limited.body().contains(MetricNames.BROKER_READY), "the scrape has the broker's figures");
    }

    @Test
    void aBadScrapeAccessNamesTheKeyAndTheChoices() {
        ConfigException e = assertThrows(ConfigException.class, () -> new ConfigLoader().load(null,
                Map.of("metrics.scrape-access", "sometimes")));
        assertTrue(e.getMessage().contains("metrics.scrape-access 'sometimes' is not one of open, authenticated"), e.getMessage());
    }
}
