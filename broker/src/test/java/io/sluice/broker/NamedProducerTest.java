package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.client.SluiceException;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Named producers through the Java client: continuing after a restart of the publisher, and fencing. */
class NamedProducerTest {
    @TempDir
    Path dir;

    private static Connection connect(Broker broker) {
        return Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .reconnectPolicy(ReconnectPolicy.DISABLED).build());
    }

    @Test
    void aNewInstanceContinuesAfterTheLastStoredSequenceAndFencesTheOldOne() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); Connection first = connect(broker); Connection second = connect(broker)) {
            first.declareQueue("orders", QueueSettings.EMPTY);
            Producer old = first.createProducer("orders", ProducerOptions.DEFAULT.withName("order-service"));
            assertEquals(1, old.epoch());
            assertEquals(0, old.lastStoredSequence());
            for (int i = 0; i < 3; i++) {
                old.send(Payloads.of(i));
            }

            Producer replacement = second.createProducer("orders", ProducerOptions.DEFAULT.withName("order-service"));
            assertEquals(old.producerId(), replacement.producerId(), "the id comes from the name");
            assertEquals(2, replacement.epoch());
            assertEquals(3, replacement.lastStoredSequence());
            replacement.send(Payloads.of(3)); // sequence 4, after the 3 stored: not taken for a resend

            ExecutionException fenced = assertThrows(ExecutionException.class,
                    () -> old.sendAsync(Payloads.of(99)).get(10, TimeUnit.SECONDS));
            SluiceException cause = (SluiceException) fenced.getCause();
            assertEquals(ErrorCode.PRODUCER_FENCED, cause.errorCode());
            assertTrue(cause.getMessage().contains("fenced"), cause.getMessage());

            assertEquals(4, first.declareQueue("orders", QueueSettings.EMPTY), "the four messages, the fenced one not");
            IllegalStateException twice = assertThrows(IllegalStateException.class,
                    () -> second.createProducer("orders", ProducerOptions.DEFAULT.withName("order-service")));
            assertTrue(twice.getMessage().contains("already open"), twice.getMessage());
        }
    }

    /**
     * Sequences are signed 64-bit and a publish may jump forward by any amount, so a named producer's last stored sequence
     * may be near Long.MAX_VALUE (another instance, or a raw client, jumped there). The client continued past it by
     * overflow: the next sequence was Long.MIN_VALUE, which carries no identity (below 1), so the broker stored it
     * untracked and a resend after a reconnect would be stored again. A producer whose sequences are used up fails
     * the send, saying so, and sends nothing.
     */
    @Test
    void aNamedProducerWhoseSequencesAreUsedUpFailsTheSendInsteadOfWrapping() throws Exception {
        long id = io.sluice.protocol.ProducerIds.forName("order-service");
        try (Broker broker = TestBrokers.start(dir, Map.of()); Connection connection = connect(broker);
             RawClient raw = RawClient.connected(broker.port())) {
            connection.declareQueue("orders", QueueSettings.EMPTY);
            io.sluice.protocol.PublishFrameBuilder b = new io.sluice.protocol.PublishFrameBuilder(raw.alloc(), "orders");
            b.add(id, Long.MAX_VALUE - 1, java.util.List.of(), new byte[]{1});
            raw.send(b.build());
            raw.expect(io.sluice.protocol.ConfirmFrame.class);

            Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT.withName("order-service"));
            assertEquals(Long.MAX_VALUE - 1, producer.lastStoredSequence());
            producer.send(Payloads.of(1)); // Long.MAX_VALUE, the last
            ExecutionException usedUp = assertThrows(ExecutionException.class,
                    () -> producer.sendAsync(Payloads.of(2)).get(10, TimeUnit.SECONDS));
            assertTrue(usedUp.getCause().getMessage().contains("sequence"), usedUp.getCause().getMessage());
            assertEquals(2, connection.declareQueue("orders", QueueSettings.EMPTY), "nothing stored past the last sequence");
        }
    }

    @Test
    void aNameTooLongIsRefusedBeforeAnythingIsSent() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ProducerOptions.DEFAULT.withName("n".repeat(300)));
        assertTrue(e.getMessage().contains("300 bytes"), e.getMessage());
    }

    /**
     * Closing a named producer a second time (try-with-resources around an explicit close) queued a second removal by
     * producer id, which took out the new instance of the same name registered meanwhile: its confirms were dropped
     * and its sends timed out (found by a review).
     */
    @Test
    void aSecondCloseOfAnOldInstanceLeavesTheNewInstanceOfItsNameAlone() {
        try (Broker broker = TestBrokers.start(dir, Map.of()); Connection connection = connect(broker)) {
            connection.declareQueue("orders", QueueSettings.EMPTY);
            Producer first = connection.createProducer("orders", ProducerOptions.DEFAULT.withName("order-service"));
            first.send(Payloads.of(1));
            first.close();
            connection.declareQueue("orders", QueueSettings.EMPTY); // a round trip: the close and its removal ran
            Producer second = connection.createProducer("orders", ProducerOptions.DEFAULT.withName("order-service"));
            second.send(Payloads.of(2));
            first.close();
            connection.declareQueue("orders", QueueSettings.EMPTY); // a round trip: a second removal would have run
            // Confirmed: the new instance is still registered, so its CONFIRM reached it (a dropped one times out here).
            second.send(Payloads.of(3), java.time.Duration.ofSeconds(10));
            assertEquals(3L, (long) connection.declareQueue("orders", QueueSettings.EMPTY),
                    "the three messages stored, each once");
        }
    }
}
