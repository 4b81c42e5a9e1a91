package io.sluice.broker;

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
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kills a broker child JVM (durability "always") with kill -9 while a producer in this JVM publishes, three
 * times, restarting it on the same data directory each time; then consumes everything. Every confirmed
 * message must come back at least once, and no message whose ack the broker had processed may return.
 */
@Tag("slow")
class BrokerCrashTest {
    private static final String QUEUE = "crash";
    private static final int ROUNDS = 3;

    @TempDir
    Path dir;
    private Process broker;
    private int port;

    /** Payload sequences whose sendAsync future completed successfully. */
    private final Set<Long> confirmed = ConcurrentHashMap.newKeySet();
    /** Payload sequences acked, counted only once the broker's unacked count showed the acks were processed. */
    private final Set<Long> acked = new HashSet<>();
    private final AtomicLong nextSequence = new AtomicLong();
    private final AtomicLong sent = new AtomicLong();

    @AfterEach
    void killBroker() throws InterruptedException {
        if (broker != null && broker.isAlive()) {
            ChildJvm.kill(broker);
        }
    }

    private void startBroker(int round) throws Exception {
        port = ChildJvm.freePort();
        Path log = dir.resolve("broker-" + round + ".log");
        broker = ChildJvm.start(log, Main.class, "--data-dir", dir.resolve("data").toString(),
                "--port", Integer.toString(port), "--set", "storage.reserved-disk-bytes=67108864", "--set", "metrics.port=0",
                "--set", "storage.durability=always");
        ChildJvm.awaitListening(broker, port, log);
    }

    private Connection connect() {
        return Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(port)
                .reconnectPolicy(ReconnectPolicy.DISABLED).build());
    }

    @Test
    @Timeout(120)
    void shouldKeepEveryConfirmedMessageAndForgetEveryAckedOneAcrossKillNine() throws Exception {
        long started = System.nanoTime();
        for (int round = 0; round < ROUNDS; round++) {
            startBroker(round);
            try (Connection connection = connect()) {
                connection.declareQueue(QUEUE, QueueSettings.EMPTY);
                Producer producer = connection.createProducer(QUEUE, ProducerOptions.DEFAULT);
                publishAndWait(producer, 1_000);
                ackSome(connection, 300);
                publishUntilKilled(producer);
            }
        }
        startBroker(ROUNDS);
        Set<Long> received = new HashSet<>();
        long duplicates = 0;
        try (Connection connection = connect()) {
            long stored = connection.declareQueue(QUEUE, QueueSettings.EMPTY);
            Consumer consumer = connection.subscribe(QUEUE, ConsumerOptions.DEFAULT);
            for (long i = 0; i < stored; i++) {
                Message m = consumer.receive(Duration.ofSeconds(10));
                assertTrue(m != null, "the broker reported " + stored + " messages but only " + i + " arrived");
                long sequence = Payloads.sequence(m.payload());
                assertTrue(!acked.contains(sequence), "acked message " + sequence + " came back after a crash");
                if (!received.add(sequence)) {
                    duplicates++;
                }
                m.ack();
            }
        }
        Set<Long> missing = new HashSet<>(confirmed);
        missing.removeAll(acked);
        missing.removeAll(received);
        Set<Long> unconfirmedButStored = new HashSet<>(received);
        unconfirmedButStored.removeAll(confirmed);
        System.out.printf("BrokerCrashTest: %d rounds in %d ms; sent %d, confirmed %d, acked %d, received after the "
                        + "last restart %d (%d duplicates), unconfirmed but stored %d, unconfirmed and lost %d%n",
                ROUNDS, (System.nanoTime() - started) / 1_000_000, sent.get(), confirmed.size(), acked.size(),
                received.size(), duplicates, unconfirmedButStored.size(), sent.get() - confirmed.size() - unconfirmedButStored.size());
        assertEquals(Set.of(), missing, "confirmed messages lost");
        assertTrue(confirmed.size() > ROUNDS * 1_000, "each round confirmed more than the first batch");
    }

    private void publishAndWait(Producer producer, int count) throws Exception {
        java.util.List<java.util.concurrent.CompletableFuture<Void>> futures = new java.util.ArrayList<>();
        for (int i = 0; i < count; i++) {
            futures.add(send(producer));
        }
        java.util.concurrent.CompletableFuture.allOf(futures.toArray(java.util.concurrent.CompletableFuture[]::new))
                .get(30, java.util.concurrent.TimeUnit.SECONDS);
    }

    private java.util.concurrent.CompletableFuture<Void> send(Producer producer) {
        long sequence = nextSequence.getAndIncrement();
        sent.incrementAndGet();
        java.util.concurrent.CompletableFuture<Void> f = producer.sendAsync(Payloads.of(sequence));
        f.thenRun(() -> confirmed.add(sequence));
        return f;
    }

    /** Acks {@code count} messages and waits until the broker's unacked count shows it processed them. */
    private void ackSome(Connection connection, int count) throws Exception {
        long before = connection.declareQueue(QUEUE, QueueSettings.EMPTY);
        Set<Long> batch = new HashSet<>();
        Consumer consumer = connection.subscribe(QUEUE, ConsumerOptions.DEFAULT.withCredit(count));
        for (int i = 0; i < count; i++) {
            Message m = consumer.receive(Duration.ofSeconds(10));
            assertTrue(m != null, "message " + i + " of " + count + " to ack did not arrive");
            batch.add(Payloads.sequence(m.payload()));
            m.ack();
        }
        consumer.close();
        TestAwait.until("the broker processed " + count + " acks", () ->
                connection.declareQueue(QUEUE, QueueSettings.EMPTY) == before - count);
        acked.addAll(batch);
    }

    /** Publishes from another thread until enough were confirmed, then kills the broker mid-stream. */
    private void publishUntilKilled(Producer producer) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        int confirmedBefore = confirmed.size();
        Thread publisher = new Thread(() -> {
            while (!stop.get()) {
                send(producer).whenComplete((ok, failure) -> {
                    if (failure != null) {
                        stop.set(true);
                    }
                });
            }
        }, "crash-test-publisher");
        publisher.start();
        TestAwait.until("2000 more confirms", () -> confirmed.size() >= confirmedBefore + 2_000);
        ChildJvm.kill(broker);
        TestAwait.until("the publisher noticed the crash", Duration.ofSeconds(20), () -> stop.get());
        publisher.join(20_000);
        assertTrue(!publisher.isAlive(), "the publisher thread stopped");
    }
}
