package io.sluice.broker.txn;

import io.sluice.broker.Broker;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.QueueSettings;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * The worker step these tests commit: a broker with queues "orders" and "invoices", and a client whose consumer of
 * "orders" (acks of 1, written at once) has received the one order published there, o1.
 */
record OrderWorker(Broker broker, Connection connection, Consumer orders, Message order) implements AutoCloseable {
    static OrderWorker start(Path dir, Duration requestTimeout) throws Exception {
        Map<String, String> settings = Map.of("broker.data-dir", dir.toString(), "broker.port", "0", "metrics.port", "0",
                "storage.reserved-disk-bytes", "67108864");
        Broker broker = Broker.start(new ConfigLoader().load(null, settings));
        Connection connection = null;
        try {
            connection = Connection.connect(ConnectionOptions.builder().port(broker.port()).requestTimeout(requestTimeout).build());
            connection.declareQueue("orders", QueueSettings.EMPTY);
            connection.declareQueue("invoices", QueueSettings.EMPTY);
            connection.createProducer("orders", ProducerOptions.DEFAULT).send(bytes("o1"));
            Consumer orders = connection.subscribe("orders", new ConsumerOptions(10, 1, Duration.ofMillis(1)));
            Message order = orders.receive(Duration.ofSeconds(5));
            assertNotNull(order);
            return new OrderWorker(broker, connection, orders, order);
        } catch (Exception | AssertionError e) {
            if (connection != null) {
                connection.close();
            }
            broker.close();
            throw e;
        }
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void close() throws Exception {
        try {
            connection.close();
        } finally {
            broker.close();
        }
    }
}
