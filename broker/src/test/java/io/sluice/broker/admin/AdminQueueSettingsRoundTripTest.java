package io.sluice.broker.admin;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.broker.metrics.MetricsFixture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A queue's {@code settings} as GET reports them are a body PUT takes, under the same names and in the same formats, so an
 * operator who copies them into a PUT (to declare the queue again elsewhere) gets the same queue: GET reported the quota
 * as {@code "quota": {"softMessages": ..., "overflow": "BLOCK"}}, which PUT refuses, and left out deadLetterDropped.
 */
@Timeout(120)
class AdminQueueSettingsRoundTripTest {
    @TempDir
    Path dir;
    private final ObjectMapper json = new ObjectMapper();

    private JsonNode ok(HttpResponse<String> r) throws Exception {
        assertEquals(200, r.statusCode(), r.body());
        return json.readTree(r.body());
    }

    @Test
    void theSettingsGetReportsArePutsOwnAndDeclareTheSameQueue() throws Exception {
        String every = "{\"maxDeliveries\":4,\"deadLetterQueue\":\"orders-dead\",\"ackTimeoutMs\":45000,"
                + "\"quotaSoftMessages\":10,\"quotaHardMessages\":20,\"quotaSoftBytes\":1000,\"quotaHardBytes\":2000,"
                + "\"overflowPolicy\":\"drop-oldest\",\"deadLetterDropped\":true}";
        try (MetricsFixture a = new MetricsFixture(dir.resolve("a"), Map.of())) {
            ok(a.request("PUT", "/api/queues/orders", every, null));
            JsonNode reported = ok(a.request("GET", "/api/queues/orders", null, null)).path("settings");
            assertEquals(json.readTree(every), reported, "GET reports what PUT took, by PUT's names");

            ok(a.request("PUT", "/api/queues/orders", reported.toString(), null)); // the same declare again: taken
            ok(a.request("PUT", "/api/queues/orders-copy", reported.toString(), null));
            assertEquals(reported, ok(a.request("GET", "/api/queues/orders-copy", null, null)).path("settings"));

            // A queue declared with no settings reports every setting it runs with; copied to a broker whose defaults
            // differ, they make the same queue there, not one on that broker's defaults.
            ok(a.request("PUT", "/api/queues/plain", "{}", null));
            JsonNode defaults = ok(a.request("GET", "/api/queues/plain", null, null)).path("settings");
            assertEquals(json.readTree("{\"maxDeliveries\":10,\"deadLetterQueue\":\"plain.dlq\",\"ackTimeoutMs\":300000,"
                    + "\"quotaSoftMessages\":0,\"quotaHardMessages\":0,\"quotaSoftBytes\":4294967296,"
                    + "\"quotaHardBytes\":5368709120,\"overflowPolicy\":\"block\",\"deadLetterDropped\":false}"), defaults,
                    "config/sluice.yaml's defaults");
            try (MetricsFixture b = new MetricsFixture(dir.resolve("b"), Map.of("queues.max-deliveries", "9",
                    "queues.ack-timeout-ms", "60000", "queues.overflow-policy", "reject", "queues.quota-hard-bytes", "0"))) {
                ok(b.request("PUT", "/api/queues/plain", defaults.toString(), null));
                assertEquals(defaults, ok(b.request("GET", "/api/queues/plain", null, null)).path("settings"));
            }
        }
    }
}
