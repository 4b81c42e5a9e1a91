package io.sluice.broker;

import io.sluice.broker.config.ConfigLoader;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.QueueStore;
import io.sluice.storage.durability.FileForcer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * A resend after a reconnect to a queue that is BLOCKED (at its hard quota). The broker confirms a resend of a stored
 * message even then (P1, docs/broker-core.md: it costs no backlog). But the Java client held every unsent message of a
 * producer back while the queue was BLOCKED, resends included, and failed them after the blocked timeout as "not
 * sent": a named producer's resends wait for its PRODUCER_OK, and a FLOW BLOCKED that another producer's first publish
 * on the new connection drew came first. The application was told a stored message failed, never to be confirmed;
 * published again, it is stored twice.
 */
@Timeout(120)
class BlockedQueueResendTest {
    private static final String QUEUE = "slow-sync-blocked";

    @TempDir
    Path dir;
    private Broker broker;
    private final int port = TestPorts.free();

    @AfterEach
    void stop() {
        if (broker != null) {
            broker.close();
        }
    }

    private Map<String, String> settings() {
        return Map.of("broker.data-dir", dir.resolve("data").toString(), "broker.port", String.valueOf(port), "metrics.port", "0",
                "storage.reserved-disk-bytes", "67108864", "storage.durability", "always", "broker.shutdown-timeout-ms", "100");
    }

    /** A disk whose forces of the queue's segments wait until {@code held} is counted down: nothing is confirmed. */
    private static FileForcer slowDisk(CountDownLatch held) {
        return (channel, file) -> {
            if (file.toString().contains(QUEUE) && file.toString().endsWith(".cq4")) {
                try {
                    held.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            channel.force(false);
        };
    }

    @Test
    void aNamedProducersResendToABlockedQueueIsConfirmedNotFailedAsUnsent() throws Exception {
        CountDownLatch held = new CountDownLatch(1);
        broker = Broker.start(new ConfigLoader().load(null, settings()), slowDisk(held));
        ConnectionOptions options = ConnectionOptions.builder().host("127.0.0.1").port(port)
                .reconnectPolicy(new ReconnectPolicy(true, Duration.ofMillis(50), Duration.ofMillis(200), 2.0, 0.2))
                .requestTimeout(Duration.ofSeconds(30)).build();
        try (Connection connection = Connection.connect(options)) {
            connection.declareQueue(QUEUE, QueueSettings.builder().quotaMessages(1, 2).build()); // BLOCKED at 2
            Producer named = connection.createProducer(QUEUE, ProducerOptions.DEFAULT.withName("orders")
                    .withBlockedTimeout(Duration.ofSeconds(1)));
            Producer unnamed = connection.createProducer(QUEUE, ProducerOptions.DEFAULT);
            CompletableFuture<Void> fromNamed = named.sendAsync(Payloads.of(1));
            CompletableFuture<Void> fromUnnamed = unnamed.sendAsync(Payloads.of(2));
            QueueStore store = broker.queues().get(QUEUE).store();
            TestAwait.until("both stored, neither forced", () -> store.unackedMessages() == 2);

            // A stop: the two publishes are refused with NOT_CONFIRMED_SHUTDOWN, which a reconnecting client keeps.
            Broker stopping = broker;
            broker = null;
            Thread closer = new Thread(stopping::close, "blocked-resend-closer");
            closer.start();
            try {
                TestAwait.until("the connection closed by the stop", () -> !connection.isConnected());
                assertFalse(fromNamed.isDone() || fromUnnamed.isDone(), "both wait to be sent again");
            } finally {
                held.countDown();
                closer.join(20_000);
            }

            broker = Broker.start(new ConfigLoader().load(null, settings())); // both stored: the queue is BLOCKED
            fromUnnamed.get(30, TimeUnit.SECONDS);
            fromNamed.get(30, TimeUnit.SECONDS); // before the fix: SluiceTimeoutException, "the message was not sent"
            assertEquals(2L, (long) connection.declareQueue(QUEUE, QueueSettings.builder().quotaMessages(1, 2).build()),
                    "each stored once");
        }
    }
}
