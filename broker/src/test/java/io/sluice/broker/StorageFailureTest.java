package io.sluice.broker;

import io.sluice.broker.config.ConfigLoader;
import io.sluice.broker.metrics.MetricNames;
import io.sluice.broker.metrics.MetricsFixture;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.client.SluiceException;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.durability.FileForcer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A disk that fails one force of one queue's segment (EIO once, as Linux reports it): the producer
 * waiting for that confirm gets STORAGE_FAILED instead, later publishes to that queue are refused with
 * it, another queue is confirmed as before, and health and metrics show the failed queue.
 */
@Timeout(60)
class StorageFailureTest {
    @TempDir
    Path dataDir;
    private Broker broker;
    private Connection connection;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @AfterEach
    void stop() {
        if (connection != null) {
            connection.close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    @Test
    void aFailedForceRefusesTheWaitingPublishesWithStorageFailedAndShowsInHealthAndMetrics() throws Exception {
        AtomicBoolean armed = new AtomicBoolean();
        FileForcer failOnce = (channel, file) -> {
            if (file.toString().contains("/queues/bad/") && armed.compareAndSet(true, false)) {
                throw new IOException("Input/output error (injected)");
            }
            FileForcer.FSYNC.force(channel, file);
        };
        broker = Broker.start(new ConfigLoader().load(null, Map.of(
                "broker.data-dir", dataDir.toString(), "broker.port", "0", "metrics.port", "0",
                "storage.reserved-disk-bytes", "67108864")), failOnce);
        connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .reconnectPolicy(ReconnectPolicy.DISABLED).build());
        connection.declareQueue("bad", QueueSettings.EMPTY);
        connection.declareQueue("good", QueueSettings.EMPTY);
        Producer bad = connection.createProducer("bad", ProducerOptions.DEFAULT);
        Producer good = connection.createProducer("good", ProducerOptions.DEFAULT);
        bad.send(bytes("before"));
        assertEquals(200, get("/health/ready").statusCode());

        armed.set(true);
        CompletableFuture<Void> doomed = bad.sendAsync(bytes("doomed"));
        ExecutionException refused = assertThrows(ExecutionException.class, () -> doomed.get(20, TimeUnit.SECONDS));
        assertEquals(ErrorCode.STORAGE_FAILED, assertInstanceOf(SluiceException.class, refused.getCause()).errorCode());

        ExecutionException later = assertThrows(ExecutionException.class,
                () -> bad.sendAsync(bytes("after")).get(20, TimeUnit.SECONDS));
        assertEquals(ErrorCode.STORAGE_FAILED, assertInstanceOf(SluiceException.class, later.getCause()).errorCode());
        good.send(bytes("fine")); // returns once confirmed

        HttpResponse<String> ready = get("/health/ready");
        assertEquals(503, ready.statusCode());
        assertTrue(ready.body().contains("queue 'bad'") && ready.body().contains("Input/output error"), ready.body());
        Map<String, Double> samples = MetricsFixture.parse(get("/metrics").body());
        assertEquals(1.0, samples.get(MetricNames.QUEUE_STORAGE_FAILED + "{queue=\"bad\"}"));
        assertEquals(0.0, samples.get(MetricNames.QUEUE_STORAGE_FAILED + "{queue=\"good\"}"));
        // Rule W2 of docs/flow-control.md: the publishes the failure refused gave back what they held, as the confirmed ones.
        TestAwait.until("no publish bytes held", () -> heldBytes() == 0.0);
    }

    private double heldBytes() {
        try {
            return MetricsFixture.parse(get("/metrics").body()).get(MetricNames.PUBLISH_HELD_BYTES);
        } catch (IOException | InterruptedException e) {
            throw new AssertionError("scraping the metrics failed", e);
        }
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + broker.metricsPort() + path))
                .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }
}
