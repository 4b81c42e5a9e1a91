package io.sluice.broker;

import io.sluice.broker.config.ConfigLoader;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/** The quickstart of README.md, run against a real broker so the README stays true. */
class QuickstartTest {
    @TempDir
    Path dataDir;

    @Test
    void shouldRunTheReadmeQuickstart() throws InterruptedException {
        try (Broker broker = Broker.start(new ConfigLoader().load(null,
                Map.of("broker.data-dir", dataDir.toString(), "broker.port", "0", "storage.reserved-disk-bytes", "0")))) {
            int port = broker.port();
            // --- README quickstart starts here
            try (Connection connection = Connection.connect(ConnectionOptions.builder().port(port).build())) {
                connection.declareQueue("greetings", QueueSettings.EMPTY);

                Producer producer = connection.createProducer("greetings", ProducerOptions.DEFAULT);
                producer.send("hello".getBytes(StandardCharsets.UTF_8)); // returns once the broker confirmed it

                Consumer consumer = connection.subscribe("greetings", ConsumerOptions.DEFAULT);
                Message message = consumer.receive(Duration.ofSeconds(5));
                System.out.println(new String(message.payload(), StandardCharsets.UTF_8));
                message.ack();
                // --- README quickstart ends here
                assertNotNull(message);
                assertEquals("hello", new String(message.payload(), StandardCharsets.UTF_8));
                assertEquals(1, message.deliveryCount());
                consumer.close();
            }
        }
    }

    @Test
    void shouldKeepDeliverFramesWithinTheFrameSizeTheClientAgreedTo() throws InterruptedException {
        try (Broker broker = Broker.start(new ConfigLoader().load(null,
                Map.of("broker.data-dir", dataDir.toString(), "broker.port", "0", "storage.reserved-disk-bytes", "0")));
             Connection connection = Connection.connect(ConnectionOptions.builder().port(broker.port()).maxFrameBytes(4096).build())) {
            connection.declareQueue("small", QueueSettings.EMPTY);
            Producer producer = connection.createProducer("small", ProducerOptions.DEFAULT);
            byte[] payload = new byte[1000];
            for (int i = 0; i < 100; i++) {
                payload[0] = (byte) i;
                producer.send(payload.clone());
            }
            Consumer consumer = connection.subscribe("small", ConsumerOptions.DEFAULT);
            for (int i = 0; i < 100; i++) {
                Message m = consumer.receive(Duration.ofSeconds(10));
                assertNotNull(m, "message " + i + " arrived in frames of at most 4096 bytes");
                assertEquals((byte) i, m.payload()[0]);
                m.ack();
            }
            consumer.close();
        }
    }
}
