package io.sluice.broker;

import ch.qos.logback.classic.Level;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.HelloOkFrame;
import io.sluice.protocol.MessageHeader;
import io.sluice.protocol.PublishFrameBuilder;
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
    /** The header entry "h": its key's length, the key, its value's length and the value. */
    private static final long HEADER_ENTRY_BYTES = 2 + 1 + 4 + HEADER_VALUE_BYTES;

    @TempDir
    Path dir;

    /**
     * Every path that settles a message gives back what it took: refused at the edge (an unknown queue), stored, and
     * a resend of a stored message (a duplicate), each of messages with a header, to a client granted the capability
     * and to one from before it.
     */
    @Test
    void refusalsStoresAndDuplicatesGiveBackWhatTheirMessagesTookInTheUnitGranted() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of())) {
            broker.queues().declare("q", QueueSettings.EMPTY);
            assertEquals(List.of(3 * (HEADER_ENTRY_BYTES + 2), 3 * (HEADER_ENTRY_BYTES + 2), 3 * (HEADER_ENTRY_BYTES + 2)),
                    creditsFor(broker, HelloFrame.KNOWN_CAPABILITIES, 1), "headers and payload");
            assertEquals(List.of(3L * 2, 3L * 2, 3L * 2), creditsFor(broker, HelloFrame.CAPABILITY_TRANSACTIONS, 2),
                    "payload alone, for a client that did not ask");
        }
    }

    /** The bytes of the PUBLISH_CREDITs for three messages to an unknown queue, three stored, the same three again. */
    private static List<Long> creditsFor(Broker broker, int capabilities, long producerId) throws Exception {
        try (RawClient raw = new RawClient(broker.port())) {
            raw.send(new HelloFrame(1, 1, "raw", 0, 0, "", "", capabilities));
            raw.expect(HelloOkFrame.class);
            List<Long> credits = new ArrayList<>();
            for (String queue : List.of("missing", "q", "q")) {
                PublishFrameBuilder frame = new PublishFrameBuilder(raw.alloc(), queue);
                for (long sequence = 1; sequence <= 3; sequence++) {
                    frame.add(producerId, sequence, List.of(new MessageHeader("h", new byte[HEADER_VALUE_BYTES])), new byte[2]);
                }
                long bytesBefore = raw.publishCreditBytes.get();
                long messagesAfter = raw.publishCredit.get() + 3;
                raw.send(frame.build());
                TestAwait.until("the window of three messages to '" + queue + "' given back", () -> raw.publishCredit.get() >= messagesAfter);
                credits.add(raw.publishCreditBytes.get() - bytesBefore);
            }
            return credits;
        }
    }

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
            assertEquals(0, log.count(Level.INFO, "bytes of headers and payload published"),
                    "a client whose window counts headers is never paused by the broker's own count (rule W2): " + log.events());
        }
    }
}
