package io.sluice.broker;

import ch.qos.logback.classic.Level;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.MessageHeader;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The publish window's bytes count headers as well as payload (WINDOW_COUNTS_HEADERS, docs/flow-control.md): before,
 * both ends counted payload alone, so a producer of messages with large headers and small payloads stayed "within" a
 * window of 64 MiB while the broker held up to a window of messages of headers (ten thousand, each up to
 * storage.max-message-bytes). The real client and the real broker must agree on the unit: a client that took less
 * than the broker counts overruns the window (the broker pauses reading and says so), one that took more stalls.
 */
@Timeout(120)
class PublishWindowHeadersTest {
    private static final int MESSAGES = 2_000;
    private static final int HEADER_VALUE_BYTES = 1_000;

    @TempDir
    Path dir;

    @Test
    void aProducerOfLargeHeadersKeepsWithinTheBrokersWindowAndEveryMessageIsConfirmed() throws Exception {
        try (LogCapture log = LogCapture.of("io.sluice.broker.net.ClientSessionAdapter");
             Broker broker = TestBrokers.start(dir, Map.of("broker.publish-window-bytes", "16384"))) {
            broker.queues().declare("q", QueueSettings.EMPTY);
            try (Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                    .reconnectPolicy(ReconnectPolicy.DISABLED).build())) {
                Producer producer = c.createProducer("q", ProducerOptions.DEFAULT);
                List<MessageHeader> headers = List.of(new MessageHeader("h", new byte[HEADER_VALUE_BYTES]));
                List<CompletableFuture<Void>> confirms = new ArrayList<>();
                for (int i = 0; i < MESSAGES; i++) {
                    confirms.add(producer.sendAsync(new byte[] {(byte) i}, headers));
                }
                CompletableFuture.allOf(confirms.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
            }
            assertEquals(MESSAGES, broker.queues().get("q").store().unackedMessages(), "every message stored once");
            assertEquals(0, log.count(Level.WARN, "beyond its publish window"),
                    "the client kept within the window as the broker counts it: " + log.events());
        }
    }
}
