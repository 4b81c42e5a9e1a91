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
import io.sluice.protocol.NackAction;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.sluice.broker.metrics.MetricsFixture.basic;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The admin API under the wire protocol's permissions: {@code limited} may do everything on {@code A*}
 * and nothing else, {@code ops} everything everywhere, {@code watcher} only monitor on every queue.
 * Queue {@code B} holds 5 messages; nothing {@code limited} tries may change that.
 */
@Timeout(180)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AdminPermissionsTest {
    private MetricsFixture fixture;
    private final ObjectMapper json = new ObjectMapper();
    private static final String LIMITED = basic("limited", "s3cret");
    private static final String OPS = basic("ops", "s3cret");
    private static final String WATCHER = basic("watcher", "s3cret");

    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        String hash = PasswordHasher.hash("s3cret".toCharArray());
        Path config = dir.resolve("sluice.yaml");
        Files.writeString(config, """
                auth:
                  allow-anonymous: false
                  users:
                    - name: limited
                      password-hash: "%1$s"
                      permissions:
                        - queues: "A*"
                          actions: [publish, consume, manage]
                    - name: ops
                      password-hash: "%1$s"
                      permissions:
                        - queues: "*"
                          actions: [publish, consume, manage]
                    - name: watcher
                      password-hash: "%1$s"
                      permissions:
                        - queues: "*"
                          actions: [monitor]
                """.formatted(hash));
        fixture = new MetricsFixture(dir.resolve("data"), config, Map.of());
        try (Connection ops = fixture.connect("ops", "s3cret")) {
            ops.declareQueue("B", QueueSettings.EMPTY);
            ops.declareQueue("A1", QueueSettings.EMPTY);
            try (Producer p = ops.createProducer("B", ProducerOptions.DEFAULT)) {
                for (int i = 0; i < 5; i++) {
                    p.send(("message " + i).getBytes(StandardCharsets.UTF_8));
                }
            }
        }
    }

    @AfterAll
    void stop() {
        if (fixture != null) {
            fixture.close();
        }
    }

    private HttpResponse<String> call(String method, String path, String authorization) throws Exception {
        return fixture.request(method, path, method.equals("PUT") ? "{}" : null, authorization);
    }

    private JsonNode ok(HttpResponse<String> r) throws Exception {
        assertEquals(200, r.statusCode(), r.body());
        return json.readTree(r.body());
    }

    private void assertDenied(HttpResponse<String> r, String sentence) throws Exception {
        assertEquals(403, r.statusCode(), r.body());
        JsonNode body = json.readTree(r.body());
        assertEquals("access_denied", body.path("error").asText(), r.body());
        assertTrue(body.path("message").asText().contains(sentence), r.body());
    }

    private static List<String> names(JsonNode list, String field) {
        List<String> out = new ArrayList<>();
        list.forEach(n -> out.add(n.path(field).asText()));
        return out;
    }

    @Test
    void shouldRefuseEveryQueueOperationOutsideTheUsersGrants() throws Exception {
        assertDenied(call("GET", "/api/queues/B", LIMITED), "user 'limited' may not see queue 'B'");
        assertDenied(call("PUT", "/api/queues/C", LIMITED), "user 'limited' may not manage on queue 'C'");
        assertDenied(call("POST", "/api/queues/B/purge", LIMITED), "user 'limited' may not manage on queue 'B'");
        assertDenied(call("DELETE", "/api/queues/B", LIMITED), "user 'limited' may not manage on queue 'B'");
        assertDenied(call("DELETE", "/api/queues/B", WATCHER), "user 'watcher' may not manage on queue 'B'");
        assertDenied(call("POST", "/api/queues/B/purge", WATCHER), "user 'watcher' may not manage on queue 'B'");

        JsonNode b = ok(call("GET", "/api/queues/B", OPS));
        assertEquals(5, b.path("backlogMessages").asLong(), "B keeps its 5 messages: " + b);
        assertEquals(404, call("GET", "/api/queues/C", OPS).statusCode(), "C was not created");
    }

    @Test
    void shouldDenyBeforeLookingTheQueueUpSoThatNamesCannotBeProbed() throws Exception {
        assertDenied(call("GET", "/api/queues/nonexistent", LIMITED), "user 'limited' may not see queue 'nonexistent'");
        assertDenied(call("DELETE", "/api/queues/nonexistent", LIMITED), "may not manage on queue 'nonexistent'");
        assertEquals(404, call("GET", "/api/queues/A-none", LIMITED).statusCode());
    }

    @Test
    void shouldLetEachUserDoWhatItsGrantsAllow() throws Exception {
        ok(call("GET", "/api/queues/A1", LIMITED));
        assertTrue(ok(call("PUT", "/api/queues/A2", LIMITED)).path("created").asBoolean());
        assertEquals(0, ok(call("POST", "/api/queues/A2/purge", LIMITED)).path("purgedMessages").asLong());
        assertEquals("A2", ok(call("DELETE", "/api/queues/A2", LIMITED)).path("deleted").asText());
        assertEquals(5, ok(call("GET", "/api/queues/B", WATCHER)).path("backlogMessages").asLong(), "monitor reads figures");
    }

    @Test
    void shouldListOnlyTheQueuesConsumersAndProducersTheUserMaySee() throws Exception {
        assertEquals(List.of("A1"), names(ok(call("GET", "/api/queues", LIMITED)), "name"));
        assertEquals(List.of("A1", "B"), names(ok(call("GET", "/api/queues", WATCHER)), "name"));
        try (Connection ops = fixture.connect("ops", "s3cret");
             Consumer onB = ops.subscribe("B", ConsumerOptions.DEFAULT.withCredit(1));
             Producer toB = ops.createProducer("B", ProducerOptions.DEFAULT)) {
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            JsonNode consumers;
            do {
                consumers = ok(call("GET", "/api/consumers", OPS));
            } while (consumers.size() != 1 && System.nanoTime() < deadline);
            assertEquals(List.of("B"), names(consumers, "queue"));
            assertEquals(List.of(), names(ok(call("GET", "/api/consumers", LIMITED)), "queue"));
            assertEquals(List.of(), names(ok(call("GET", "/api/producers", LIMITED)), "queue"));
            assertEquals(List.of("B"), names(ok(call("GET", "/api/consumers", WATCHER)), "queue"));
            onB.receive(Duration.ofSeconds(10)).nack(NackAction.REQUEUE);
        }
    }

    @Test
    void shouldShowAndCloseOnlyTheUsersOwnConnectionsUnlessItManagesEveryQueue() throws Exception {
        try (Connection opsConnection = fixture.connect("ops", "s3cret");
             Connection limitedConnection = fixture.connect("limited", "s3cret")) {
            JsonNode all = ok(call("GET", "/api/connections", OPS));
            assertEquals(List.of("limited", "ops"), names(all, "user").stream().sorted().toList());
            JsonNode own = ok(call("GET", "/api/connections", LIMITED));
            assertEquals(List.of("limited"), names(own, "user"));
            String opsId = null;
            for (JsonNode c : all) {
                if (c.path("user").asText().equals("ops")) {
                    opsId = c.path("id").asText();
                }
            }
            HttpResponse<String> close = call("DELETE", "/api/connections/" + opsId, LIMITED);
            assertDenied(close, "user 'limited' may not close connection '" + opsId + "' of user 'ops'");
            assertTrue(opsConnection.isConnected());
            String limitedId = own.get(0).path("id").asText();
            ok(call("DELETE", "/api/connections/" + limitedId, LIMITED));
        }
    }
}
