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
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The real client against an in-JVM broker: publish confirms, delivery order, competition, redelivery. */
@Timeout(90)
class ClientBrokerEndToEndTest {
    @TempDir
    Path dataDir;
    private Broker broker;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    private Broker startBroker(Map<String, String> extra) {
        Map<String, String> overrides = new HashMap<>(Map.of(
                "broker.data-dir", dataDir.resolve("data").toString(),
                "broker.port", "0",
                "metrics.port", "0",
                "storage.reserved-disk-bytes", "67108864"));
        overrides.putAll(extra);
        broker = Broker.start(new ConfigLoader().load(null, overrides));
        return broker;
    }

    private Connection connect() {
        Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .reconnectPolicy(ReconnectPolicy.DISABLED).build());
        toClose.add(c);
        return c;
    }

    @AfterEach
    void stop() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    /** Publishes payloads {@code from .. from+count-1} with sendAsync and waits for every confirm. */
    private static void publishConfirmed(Producer producer, long from, int count) throws Exception {
        List<CompletableFuture<Void>> futures = new ArrayList<>(count);
        for (long s = from; s < from + count; s++) {
            futures.add(producer.sendAsync(Payloads.of(s)));
        }
        CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
    }

    private static List<Long> range(long from, int count) {
        return LongStream.range(from, from + count).boxed().collect(Collectors.toList());
    }

    private long unacked(String queue) {
        return broker.store().queue(queue).unackedMessages();
    }

    /**
     * Acks made before {@code Connection.close()} reach the broker, though the consumer was never closed and
     * its acks were still batched (a long flush delay): closing the connection writes them before the CLOSE.
     * On main they were dropped, and every acked message was delivered again to the next consumer.
     */
    @Test
    void shouldWriteTheAcksBatchedBeforeTheConnectionCloses() throws Exception {
        startBroker(Map.of());
        Connection connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .reconnectPolicy(ReconnectPolicy.DISABLED).build());
        connection.declareQueue("closing", QueueSettings.EMPTY);
        publishConfirmed(connection.createProducer("closing", ProducerOptions.DEFAULT), 0, 50);
        Consumer consumer = connection.subscribe("closing", new ConsumerOptions(100, 128, java.time.Duration.ofSeconds(30)));
        for (int i = 0; i < 50; i++) {
            Message m = consumer.receive(java.time.Duration.ofSeconds(10));
            assertTrue(m != null, "only " + i + " delivered");
            m.ack();
        }
        connection.close();
        TestAwait.until("the broker forgetting the acked messages", java.time.Duration.ofSeconds(10), () -> unacked("closing") == 0);
    }

    @Test
    void shouldDeliverEveryConfirmedMessageInPublishOrderAndForgetThemOnceAcked() throws Exception {
        startBroker(Map.of());
        Connection connection = connect();
        connection.declareQueue("orders", QueueSettings.EMPTY);
        publishConfirmed(connection.createProducer("orders", ProducerOptions.DEFAULT), 0, 5_000);
        assertEquals(5_000, unacked("orders"));

        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
        List<Long> received = new ArrayList<>();
        while (received.size() < 5_000) {
            Message m = consumer.receive(Duration.ofSeconds(10));
            if (m == null) {
                throw new AssertionError("only " + received.size() + " of 5000 messages arrived");
            }
            assertEquals(1, m.deliveryCount(), "first delivery of " + m);
            received.add(Payloads.sequence(m.payload()));
            m.ack();
        }
        assertEquals(range(0, 5_000), received, "exactly the published messages, in order");
        TestAwait.until("the store has no unacked message", () -> unacked("orders") == 0);
        assertNull(consumer.receive(Duration.ofMillis(200)), "nothing beyond the published messages");
    }

    @Test
    void shouldSplitAQueueBetweenCompetingConsumersWithoutLossOrDuplicates() throws Exception {
        startBroker(Map.of());
        Connection producerConnection = connect();
        producerConnection.declareQueue("work", QueueSettings.EMPTY);
        List<List<Long>> streams = List.of(Collections.synchronizedList(new ArrayList<>()),
                Collections.synchronizedList(new ArrayList<>()));
        for (List<Long> stream : streams) {
            connect().subscribe("work", ConsumerOptions.DEFAULT.withCredit(100), m -> {
                stream.add(Payloads.sequence(m.payload()));
                m.ack();
            });
        }
        publishConfirmed(producerConnection.createProducer("work", ProducerOptions.DEFAULT), 0, 5_000);
        TestAwait.until("5000 messages consumed", () -> streams.get(0).size() + streams.get(1).size() >= 5_000);
        TestAwait.until("the store has no unacked message", () -> unacked("work") == 0);

        Set<Long> union = new HashSet<>();
        for (List<Long> stream : streams) {
            List<Long> copy;
            synchronized (stream) {
                copy = new ArrayList<>(stream);
            }
            assertTrue(!copy.isEmpty(), "each consumer gets a share");
            for (int i = 1; i < copy.size(); i++) {
                assertTrue(copy.get(i - 1) < copy.get(i), "each consumer's stream is in publish order: " + copy.get(i - 1)
                        + " then " + copy.get(i));
            }
            for (long s : copy) {
                assertTrue(union.add(s), "message " + s + " delivered twice");
            }
        }
        assertEquals(new HashSet<>(range(0, 5_000)), union);
    }

    @Test
    void shouldRedeliverTheUnackedMessagesOfAKilledConsumerProcess() throws Exception {
        startBroker(Map.of());
        Connection connection = connect();
        connection.declareQueue("jobs", QueueSettings.EMPTY);
        publishConfirmed(connection.createProducer("jobs", ProducerOptions.DEFAULT), 0, 300);

        Path output = dataDir.resolve("child-consumer.log");
        Process child = ChildJvm.start(output, ChildConsumerMain.class, Integer.toString(broker.port()), "jobs");
        try {
            ChildJvm.awaitOutput(child, output, "the child consumer received all 300", "received 300"::equals);
            assertEquals(1, broker.queues().get("jobs").consumerCount());
        } finally {
            ChildJvm.kill(child);
        }
        TestAwait.until("the killed consumer is gone", () -> broker.queues().get("jobs").consumerCount() == 0);

        Consumer survivor = connection.subscribe("jobs", ConsumerOptions.DEFAULT);
        List<Long> received = new ArrayList<>();
        while (received.size() < 300) {
            Message m = survivor.receive(Duration.ofSeconds(10));
            if (m == null) {
                throw new AssertionError("only " + received.size() + " of 300 messages came back");
            }
            assertEquals(2, m.deliveryCount(), "second delivery of " + m);
            received.add(Payloads.sequence(m.payload()));
            m.ack();
        }
        assertEquals(range(0, 300), received, "every unacked message, in order");
        TestAwait.until("the store has no unacked message", () -> unacked("jobs") == 0);
        assertNull(survivor.receive(Duration.ofMillis(200)));
    }

    @Test
    void shouldRedeliverTheMessagesOfAClosedConnectionThatNeverAcked() throws Exception {
        startBroker(Map.of());
        Connection connection = connect();
        connection.declareQueue("jobs", QueueSettings.EMPTY);
        publishConfirmed(connection.createProducer("jobs", ProducerOptions.DEFAULT), 0, 100);
        Connection doomed = connect();
        Consumer first = doomed.subscribe("jobs", ConsumerOptions.DEFAULT);
        Set<Long> acked = new HashSet<>();
        for (int i = 0; i < 100; i++) {
            Message m = first.receive(Duration.ofSeconds(10));
            if (i < 40) {
                acked.add(Payloads.sequence(m.payload()));
                m.ack();
            }
        }
        TestAwait.until("40 acks processed", () -> unacked("jobs") == 60);
        doomed.close();

        Consumer second = connection.subscribe("jobs", ConsumerOptions.DEFAULT);
        List<Long> received = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            Message m = second.receive(Duration.ofSeconds(10));
            assertEquals(2, m.deliveryCount());
            received.add(Payloads.sequence(m.payload()));
            m.ack();
        }
        assertEquals(range(40, 60), received);
        assertNull(second.receive(Duration.ofMillis(200)), "no acked message returns");
    }

    @Test
    void shouldRedeliverAMessageNotAckedWithinTheQueuesAckTimeout() throws Exception {
        startBroker(Map.of());
        Connection connection = connect();
        connection.declareQueue("slow", QueueSettings.builder().ackTimeoutMs(500).build());
        publishConfirmed(connection.createProducer("slow", ProducerOptions.DEFAULT), 7, 1);
        Consumer consumer = connection.subscribe("slow", ConsumerOptions.DEFAULT);
        Message first = consumer.receive(Duration.ofSeconds(10));
        assertEquals(1, first.deliveryCount());
        long firstAt = System.nanoTime();

        Message again = consumer.receive(Duration.ofSeconds(10));
        long afterMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - firstAt);
        assertTrue(again != null, "redelivered after the ack timeout");
        assertEquals(7, Payloads.sequence(again.payload()));
        assertEquals(2, again.deliveryCount());
        assertTrue(afterMs >= 450, "not before the ack timeout of 500 ms, got it after " + afterMs + " ms");
        again.ack();
        TestAwait.until("the store has no unacked message", () -> unacked("slow") == 0);
    }

    @Test
    void shouldConfirmAndDeliverEveryMessageOfFiftyConcurrentConnections() throws Exception {
        startBroker(Map.of());
        connect().declareQueue("many", QueueSettings.EMPTY);
        ExecutorService pool = Executors.newFixedThreadPool(50);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int c = 0; c < 50; c++) {
                long from = c * 100L;
                Connection connection = connect();
                done.add(pool.submit(() -> {
                    publishConfirmed(connection.createProducer("many", ProducerOptions.DEFAULT), from, 100);
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(5_000, unacked("many"));
        Consumer consumer = connect().subscribe("many", ConsumerOptions.DEFAULT);
        Set<Long> received = new HashSet<>();
        for (int i = 0; i < 5_000; i++) {
            Message m = consumer.receive(Duration.ofSeconds(10));
            if (m == null) {
                throw new AssertionError("only " + i + " of 5000 messages arrived");
            }
            assertTrue(received.add(Payloads.sequence(m.payload())), "duplicate " + m);
            m.ack();
        }
        assertEquals(new HashSet<>(range(0, 5_000)), received);
        TestAwait.until("the store has no unacked message", () -> unacked("many") == 0);
    }

    @Test
    @Timeout(30)
    void shouldKeepConfirmingPublishesBeyondTheInitialPublishWindow() throws Exception {
        startBroker(Map.of("broker.publish-window-messages", "500"));
        Connection connection = connect();
        connection.declareQueue("long", QueueSettings.EMPTY);
        Producer producer = connection.createProducer("long", ProducerOptions.DEFAULT.withMaxInFlight(100));
        publishConfirmed(producer, 0, 2_000);
        assertEquals(2_000, unacked("long"));
    }
}
