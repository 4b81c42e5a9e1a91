package io.sluice.broker.admin;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.broker.auth.PasswordHasher;
import io.sluice.broker.metrics.MetricsFixture;
import io.sluice.client.Connection;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The admin API against a real broker: every endpoint, and each error path with its status and JSON. */
@Timeout(120)
class AdminApiTest {
    @TempDir
    Path dir;
    private MetricsFixture fixture;
    private final HttpClient http = HttpClient.newHttpClient();
    private final ObjectMapper json = new ObjectMapper();

    @AfterEach
    void stop() {
        if (fixture != null) {
            fixture.close();
        }
    }

    private HttpResponse<String> call(String method, String path, String body, String authorization) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(fixture.baseUrl() + path))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private JsonNode ok(HttpResponse<String> r) throws Exception {
        assertEquals(200, r.statusCode(), r.body());
        assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("application/json"));
        return json.readTree(r.body());
    }

    private void assertError(HttpResponse<String> r, int status, String code) throws Exception {
        assertEquals(status, r.statusCode(), r.body());
        JsonNode body = json.readTree(r.body());
        assertEquals(code, body.path("error").asText(), r.body());
        assertTrue(body.path("message").asText().length() > 10, "a sentence: " + r.body());
    }

    @Test
    void shouldDeclareListDescribePurgeAndDeleteQueues() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        JsonNode declared = ok(call("PUT", "/api/queues/jobs", "{\"maxDeliveries\": 3, \"overflowPolicy\": \"reject\","
                + " \"quotaHardMessages\": 100}", null));
        assertTrue(declared.path("created").asBoolean());
        assertEquals(3, declared.path("settings").path("maxDeliveries").asInt());
        // Every setting under PUT's name (AdminQueueSettingsRoundTripTest); which ones the declare gave is for the
        // sentences that name them, not a figure of the queue.
        assertEquals(java.util.List.of("maxDeliveries", "deadLetterQueue", "ackTimeoutMs", "quotaSoftMessages",
                        "quotaHardMessages", "quotaSoftBytes", "quotaHardBytes", "overflowPolicy", "deadLetterDropped"),
                java.util.stream.StreamSupport.stream(java.util.Spliterators.spliteratorUnknownSize(
                        declared.path("settings").fieldNames(), 0), false).toList());
        assertEquals(100, declared.path("settings").path("quotaHardMessages").asInt());
        assertEquals("reject", declared.path("settings").path("overflowPolicy").asText());
        fixture.publishAndAck("jobs", 5, 0);
        JsonNode list = ok(call("GET", "/api/queues", null, null));
        assertEquals(1, list.size());
        assertEquals("jobs", list.get(0).path("name").asText());
        assertEquals(5, list.get(0).path("backlogMessages").asLong());
        JsonNode one = ok(call("GET", "/api/queues/jobs", null, null));
        assertEquals(5, one.path("counters").path("published").asLong());
        assertEquals("free", one.path("flowState").asText());
        assertEquals(5, ok(call("POST", "/api/queues/jobs/purge", null, null)).path("purgedMessages").asLong());
        assertEquals(0, ok(call("GET", "/api/queues/jobs", null, null)).path("backlogMessages").asLong());
        assertEquals("jobs", ok(call("DELETE", "/api/queues/jobs", null, null)).path("deleted").asText());
        assertEquals(0, ok(call("GET", "/api/queues", null, null)).size());
    }

    /** limits.max-queues holds for every way a queue is created: the admin API's declare too. */
    @Test
    void aDeclareOverTheQueueLimitIsRefusedWith429() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of("limits.max-queues", "2"));
        ok(call("PUT", "/api/queues/one", "{}", null));
        ok(call("PUT", "/api/queues/two", "{}", null));
        assertError(call("PUT", "/api/queues/three", "{}", null), 429, "resource_limit");
        assertEquals(2, ok(call("GET", "/api/queues", null, null)).size());
        ok(call("PUT", "/api/queues/two", "{}", null)); // declaring one that exists is no new queue
    }

    @Test
    void shouldListConnectionsConsumersAndProducers() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        try (Connection c = fixture.connect()) {
            c.declareQueue("live", QueueSettings.EMPTY);
            try (Producer p = c.createProducer("live", ProducerOptions.DEFAULT);
                 Consumer consumer = c.subscribe("live", ConsumerOptions.DEFAULT.withCredit(7))) {
                p.send("x".getBytes(StandardCharsets.UTF_8));
                long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
                JsonNode consumers;
                do {
                    consumers = ok(call("GET", "/api/consumers", null, null));
                } while ((consumers.size() != 1 || consumers.get(0).path("unackedMessages").asInt() != 1)
                        && System.nanoTime() < deadline);
                assertEquals("live", consumers.get(0).path("queue").asText());
                assertEquals(1, consumers.get(0).path("unackedMessages").asInt(), consumers.toString());
                assertEquals(6, consumers.get(0).path("credit").asLong(), consumers.toString());
                JsonNode producers = ok(call("GET", "/api/producers", null, null));
                assertEquals(1, producers.size(), producers.toString());
                assertEquals("free", producers.get(0).path("flowState").asText());
                JsonNode connections = ok(call("GET", "/api/connections", null, null));
                assertEquals(1, connections.size(), connections.toString());
                assertTrue(connections.get(0).path("framesReceived").asLong() >= 3, connections.toString());
            }
        }
    }

    @Test
    void shouldAnswerErrorsWithStatusAndJson() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        assertError(call("GET", "/api/queues/nope", null, null), 404, "unknown_queue");
        assertError(call("DELETE", "/api/queues/nope", null, null), 404, "unknown_queue");
        assertError(call("POST", "/api/queues/nope/purge", null, null), 404, "unknown_queue");
        assertError(call("PUT", "/api/queues/q", "{not json", null), 400, "bad_json");
        assertError(call("PUT", "/api/queues/q", "[1]", null), 400, "bad_json");
        assertError(call("PUT", "/api/queues/q", "{\"maxDeliveries\": 0}", null), 400, "invalid_setting");
        assertError(call("PUT", "/api/queues/q", "{\"colour\": \"red\"}", null), 400, "invalid_setting");
        assertError(call("PUT", "/api/queues/q", "{\"maxDeliveries\": 1.5}", null), 400, "invalid_setting");
        ok(call("PUT", "/api/queues/q", "{\"maxDeliveries\": 2}", null));
        assertError(call("PUT", "/api/queues/q", "{\"maxDeliveries\": 3}", null), 409, "queue_exists_with_different_settings");
        assertError(call("GET", "/api/nothing", null, null), 404, "not_found");
        assertError(call("POST", "/api/queues", null, null), 405, "method_not_allowed");
        // The members of a cluster: a single broker has none to change.
        assertError(call("POST", "/api/cluster/nodes", "{\"id\": 4}", null), 404, "not_a_cluster");
        assertError(call("DELETE", "/api/cluster/nodes/2", null, null), 404, "not_a_cluster");
        assertError(call("GET", "/api/cluster/nodes", null, null), 405, "method_not_allowed");
    }

    @Test
    void shouldRequireBasicCredentialsWhenUsersAreConfigured() throws Exception {
        Path config = dir.resolve("sluice.yaml");
        Files.writeString(config, "auth:\n  allow-anonymous: true\n  users:\n    - name: ops\n      password-hash: \""
                + PasswordHasher.hash("s3cret".toCharArray()) + "\"\n      permissions:\n        - queues: \"*\"\n"
                + "          actions: [monitor]\n");
        fixture = new MetricsFixture(dir.resolve("data"), config, Map.of());
        String good = "Basic " + Base64.getEncoder().encodeToString("ops:s3cret".getBytes(StandardCharsets.UTF_8));
        String bad = "Basic " + Base64.getEncoder().encodeToString("ops:wrong".getBytes(StandardCharsets.UTF_8));
        HttpResponse<String> none = call("GET", "/api/queues", null, null);
        assertError(none, 401, "unauthorized");
        assertTrue(none.headers().firstValue("WWW-Authenticate").orElse("").startsWith("Basic"));
        assertError(call("GET", "/api/queues", null, bad), 401, "unauthorized");
        assertError(call("GET", "/api/queues", null, "Basic !!!"), 400, "bad_authorization");
        assertError(call("GET", "/api/queues", null, "Bearer " + good.substring(6)), 401, "unauthorized");
        ok(call("GET", "/api/queues", null, good));
        assertEquals(401, fixture.get("/metrics").statusCode(), "the metrics honour the same users");
        assertEquals(401, call("GET", "/metrics", null, bad).statusCode());
        assertEquals(200, call("GET", "/metrics", null, good).statusCode(), "credentials of a user who may see every queue open the metrics");
        assertEquals(200, fixture.get("/health/live").statusCode(), "health probes stay open for orchestrators");
        HttpResponse<String> fromConsole = http.send(HttpRequest.newBuilder(URI.create(fixture.baseUrl() + "/api/queues"))
                .header(AdminAnswers.CONSOLE_HEADER, "1").GET().build(), HttpResponse.BodyHandlers.ofString());
        assertError(fromConsole, 401, "unauthorized");
        assertTrue(fromConsole.headers().firstValue("WWW-Authenticate").orElse("").startsWith("SluiceConsole "),
                "no Basic challenge to the console, so the browser does not ask a second time with its own prompt");
    }

    /**
     * With no users configured and anonymous access on, an Authorization header was not looked at: credentials of a
     * user that does not exist, a header that is no Basic credentials and one of another scheme were all served as
     * anonymous, and a script believed it had logged in. A HELLO naming a user is checked even there (and refused, no
     * user existing); so is a header now: 401 for credentials that do not authenticate, 400 for a malformed header.
     */
    @Test
    void credentialsAreCheckedEvenWhereTheApiIsOpenToAnonymous() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        ok(call("GET", "/api/queues", null, null)); // no header: anonymous, as before
        HttpResponse<String> nobody = call("GET", "/api/queues", null, MetricsFixture.basic("ghost", "boo"));
        assertError(nobody, 401, "unauthorized");
        // Refused as what it is, without a password hash's work: with no user there is no password to check, and a
        // client sending credentials in a loop would otherwise cost the broker a key derivation per request.
        assertTrue(nobody.body().contains("user 'ghost' cannot log in: no users are configured (auth.users)"),
                "names the user refused and why: " + nobody.body());
        assertError(call("PUT", "/api/queues/made-by-ghost", "{}", MetricsFixture.basic("ghost", "boo")), 401, "unauthorized");
        assertError(call("GET", "/api/queues/made-by-ghost", null, null), 404, "unknown_queue");
        HttpResponse<String> bearer = call("GET", "/api/queues", null, "Bearer abc.def");
        assertError(bearer, 401, "unauthorized");
        assertTrue(bearer.body().contains("Bearer"), "names the scheme: " + bearer.body());
        assertError(call("GET", "/api/queues", null, "Basic !!!"), 400, "bad_authorization");
        assertError(call("GET", "/api/queues", null, "Basic"), 400, "bad_authorization");
        assertError(call("GET", "/api/queues", null, "Basic " + Base64.getEncoder().encodeToString(
                "no-colon".getBytes(StandardCharsets.UTF_8))), 400, "bad_authorization");
        assertError(call("GET", "/api/queues", null, MetricsFixture.basic("", "pw")), 401, "unauthorized");
        assertEquals(401, call("GET", "/metrics", null, MetricsFixture.basic("ghost", "boo")).statusCode(),
                "the scrape checks credentials under the same rule");
        assertEquals(400, call("GET", "/metrics", null, "Basic !!!").statusCode());
        assertEquals(200, call("GET", "/metrics", null, null).statusCode());
    }

    /**
     * With no users, credentials can only be refused, and there is no password to guess: a scraper or a script sending
     * them again and again is refused each time with 401, never put in backoff, and does not lock out the anonymous
     * requests and clients of the same address, which share the backoff's table. Before, the sixth request got 429 and
     * an anonymous client from the same address was refused for the backoff.
     */
    @Test
    void refusedCredentialsWithNoUsersConfiguredLockNobodyOut() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        for (int i = 0; i < 8; i++) {
            assertEquals(401, call("GET", "/metrics", null, MetricsFixture.basic("prometheus", "scrape")).statusCode());
            assertError(call("GET", "/api/queues", null, MetricsFixture.basic("script", "secret")), 401, "unauthorized");
        }
        ok(call("GET", "/api/queues", null, null));
        try (Connection anonymous = fixture.connect()) {
            anonymous.declareQueue("after-the-scrapes", QueueSettings.EMPTY);
        }
    }

    /** The same closed: a malformed header is 400 whether or not anonymous access is on, with users configured or not. */
    @Test
    void aMalformedAuthorizationHeaderIsABadRequestWhereTheApiIsClosedToo() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of("auth.allow-anonymous", "false"));
        assertError(call("GET", "/api/queues", null, null), 401, "unauthorized");
        assertError(call("GET", "/api/queues", null, MetricsFixture.basic("ghost", "boo")), 401, "unauthorized");
        assertError(call("GET", "/api/queues", null, "Basic !!!"), 400, "bad_authorization");
    }

    @Test
    void shouldRefuseARequestFromAPageOfAnotherOriginBeforeDoingIt() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        fixture.publishAndAck("jobs", 3, 0);
        HttpResponse<String> foreign = http.send(HttpRequest.newBuilder(URI.create(fixture.baseUrl() + "/api/queues/jobs/purge"))
                .header("Origin", "http://evil.example").POST(HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.ofString());
        assertError(foreign, 403, "cross_origin");
        assertTrue(foreign.body().contains("http://evil.example"), foreign.body());
        assertEquals(3, ok(call("GET", "/api/queues/jobs", null, null)).path("backlogMessages").asLong(), "nothing purged");
        HttpResponse<String> own = http.send(HttpRequest.newBuilder(URI.create(fixture.baseUrl() + "/api/queues/jobs/purge"))
                .header("Origin", fixture.baseUrl()).POST(HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(3, ok(own).path("purgedMessages").asLong(), "the console's own origin is served");
    }

    @Test
    void shouldReportRatesOverTheLastIntervalAndTheOldestMessagesAge() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        fixture.publishAndAck("jobs", 4, 0);
        JsonNode first = ok(call("GET", "/api/queues/jobs", null, null));
        assertTrue(first.path("oldestUnackedAgeSeconds").isNumber(), first.toString());
        assertTrue(first.path("oldestUnackedAgeSeconds").asDouble() >= 0, first.toString());
        assertTrue(first.path("oldestReadyAgeSeconds").isNumber(), first.toString());
        assertTrue(first.path("rates").has("publishedPerSecond") && first.path("rates").has("ackedPerSecond"), first.toString());
        // Two samples of the queue first, then growth between two later ones: a rate above 0.
        awaitQueue("two samples of jobs", q -> q.path("rates").path("intervalMs").asLong() > 0);
        fixture.publishAndAck("jobs", 20, 10);
        JsonNode busy = awaitQueue("a publish and an ack rate", q -> q.path("rates").path("publishedPerSecond").asDouble() > 0
                && q.path("rates").path("ackedPerSecond").asDouble() > 0);
        assertTrue(busy.path("rates").path("deliveredPerSecond").asDouble() > 0, busy.toString());
        assertTrue(ok(call("GET", "/api/queues", null, null)).get(0).path("rates").path("publishedPerSecond").isNumber());
    }

    private JsonNode awaitQueue(String what, java.util.function.Predicate<JsonNode> condition) throws Exception {
        return io.sluice.broker.TestAwait.value(what, Duration.ofSeconds(4 * QueueRates.INTERVAL_MS / 1000 + 10),
                () -> ok(call("GET", "/api/queues/jobs", null, null)), condition);
    }
}
