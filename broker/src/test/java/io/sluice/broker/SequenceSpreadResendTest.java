package io.sluice.broker;

import io.sluice.broker.config.ConfigLoader;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.client.SluiceException;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.QueueStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The broker tells a resend from a new message only within a publish window of the producer's highest stored sequence
 * (SEQUENCE_OUT_OF_WINDOW below it), on the ground that "a client resends only what it has unconfirmed, which the
 * window bounds" (docs/protocol.md). The Java client bounded the messages it had unconfirmed by the window, not the
 * span of their sequences: a message it failed itself before sending (too large for a frame, blocked too long,
 * cancelled) still used up a sequence. So with message 1 stored and unconfirmed, a few messages failed in the client
 * and message 6 sent, a reconnect resent 1 and 6, and the restarted broker refused 1 with SEQUENCE_OUT_OF_WINDOW: the
 * application was told a stored message failed, and publishing it again stores it twice.
 */
class SequenceSpreadResendTest {
    private static final int WINDOW = 4;
    private static final String QUEUE = "spread";

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

    private Broker startBroker() {
        Map<String, String> settings = new HashMap<>(Map.of("broker.data-dir", dir.resolve("data").toString(),
                "broker.port", String.valueOf(port), "metrics.port", "0", "storage.reserved-disk-bytes", "67108864",
                "broker.publish-window-messages", String.valueOf(WINDOW), "broker.max-frame-bytes", "16384",
                "storage.max-message-bytes", "8192", "broker.shutdown-timeout-ms", "100"));
        return Broker.start(new ConfigLoader().load(null, settings));
    }

    @Test
    void aStoredMessageResentAfterMessagesFailedInTheClientIsConfirmedNotRefused() throws Exception {
        broker = startBroker();
        ConnectionOptions options = ConnectionOptions.builder().host("127.0.0.1").port(port)
                .reconnectPolicy(new ReconnectPolicy(true, Duration.ofMillis(50), Duration.ofMillis(200), 2.0, 0.2))
                .requestTimeout(Duration.ofSeconds(30)).build();
        try (Connection connection = Connection.connect(options)) {
            // Slowed from the first message on, with no consumer: confirms wait for acks (C2), so what is stored stays
            // unconfirmed until the test says.
            connection.declareQueue(QUEUE, QueueSettings.builder().quotaMessages(1, 0).build());
            Producer producer = connection.createProducer(QUEUE, ProducerOptions.DEFAULT);
            QueueStore store = broker.queues().get(QUEUE).store();

            CompletableFuture<Void> first = producer.sendAsync(Payloads.of(1)); // sequence 1
            TestAwait.until("message 1 stored", () -> store.unackedMessages() == 1);
            for (int i = 0; i < WINDOW; i++) { // sequences 2..5: failed in the client, never sent
                CompletableFuture<Void> tooLarge = producer.sendAsync(new byte[20_000]);
                ExecutionException e = assertThrows(ExecutionException.class, () -> tooLarge.get(10, TimeUnit.SECONDS));
                assertEquals(ErrorCode.MESSAGE_TOO_LARGE, ((SluiceException) e.getCause()).errorCode());
            }
            CompletableFuture<Void> second = producer.sendAsync(Payloads.of(2)); // sequence 6

            // A round trip behind it: whatever the client sent of message 2 reached the broker's queue before the OK,
            // and the queue's executor has run it once a snapshot taken there is back.
            connection.declareQueue(QUEUE, QueueSettings.builder().quotaMessages(1, 0).build());
            broker.queues().get(QUEUE).snapshot().get(10, TimeUnit.SECONDS);
            // The connection drops (a restart) with message 1 unconfirmed.
            broker.close();
            broker = startBroker();

            try (Connection consuming = Connection.connect(options)) {
                List<Long> received = new ArrayList<>();
                Consumer consumer = consuming.subscribe(QUEUE, ConsumerOptions.DEFAULT);
                first.get(30, TimeUnit.SECONDS); // a resend: confirmed without a token (P1), or refused before the fix
                while (received.size() < 2) {
                    Message m = consumer.receive(Duration.ofSeconds(30));
                    if (m == null) {
                        break;
                    }
                    received.add(Payloads.sequence(m.payload()));
                    m.ack();
                }
                second.get(30, TimeUnit.SECONDS);
                assertEquals(List.of(1L, 2L), received, "each message stored once, in order");
                QueueStore restarted = broker.queues().get(QUEUE).store();
                TestAwait.until("both acks applied and nothing else stored", () -> restarted.unackedMessages() == 0);
            }
        }
    }
}
