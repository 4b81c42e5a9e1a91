package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.SluiceException;
import io.sluice.client.SluiceTimeoutException;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FlowControlTest {
    @TempDir
    Path dataDir;
    private Broker broker;

    private Broker start(Map<String, String> extra) {
        broker = TestBrokers.start(dataDir, extra);
        return broker;
    }

    @AfterEach
    void stop() {
        if (broker != null) {
            broker.close();
        }
    }

    private Connection connect() {
        return Connection.connect(ConnectionOptions.builder().port(broker.port()).build());
    }

    private static byte[] payload(long seq) {
        return ByteBuffer.allocate(16).putLong(seq).putLong(0).array();
    }

    private static long seqOf(Message m) {
        return ByteBuffer.wrap(m.payload()).getLong();
    }

    private long backlog(String queue) {
        return broker.store().queue(queue).unackedMessages();
    }

    @Test
    void shouldBlockProducersAtTheHardQuotaAndResumeOnceConsumersDrainIt() throws Exception {
        start(Map.of());
        List<FlowState> states = new CopyOnWriteArrayList<>();
        try (Connection c = connect()) {
            c.declareQueue("w", QueueSettings.builder().set(QueueSettings.QUOTA_HARD_MESSAGES, 100).build());
            Producer p = c.createProducer("w", new ProducerOptions(20, 256, 1 << 20, (q, s, r) -> states.add(s)));
            List<CompletableFuture<Void>> sent = new CopyOnWriteArrayList<>();
            Thread producer = new Thread(() -> {
                for (int i = 0; i < 300; i++) {
                    sent.add(p.sendAsync(payload(i)));
                }
            });
            producer.start();
            TestAwait.until("producer told it is blocked", () -> states.contains(FlowState.BLOCKED));
            TestAwait.until("producer stalls", () -> sent.size() >= 100 + 20 && producer.getState() == Thread.State.WAITING);
            long atBlock = backlog("w");
            assertTrue(atBlock >= 100 && atBlock <= 100 + 20, "backlog " + atBlock + " is the hard quota plus at most the in-flight window");
            assertTrue(sent.size() < 300, "the producer waits while blocked: " + sent.size() + " of 300 handed over");

            Consumer consumer = c.subscribe("w", new ConsumerOptions(50, 16, Duration.ofMillis(1)));
            Set<Long> received = new TreeSet<>();
            long maxBacklog = atBlock;
            while (received.size() < 300) {
                Message m = consumer.receive(Duration.ofSeconds(10));
                assertNotNull(m, "received " + received.size() + " of 300");
                received.add(seqOf(m));
                m.ack();
                maxBacklog = Math.max(maxBacklog, backlog("w"));
            }
            producer.join(10_000);
            CompletableFuture.allOf(sent.toArray(new CompletableFuture[0])).get(10, TimeUnit.SECONDS);
            assertEquals(300, received.size(), "nothing lost");
            assertTrue(maxBacklog <= 120, "backlog never above hard quota plus in flight: " + maxBacklog);
            int blocked = states.indexOf(FlowState.BLOCKED);
            assertTrue(states.subList(blocked, states.size()).contains(FlowState.FREE), "resumed after the drain: " + states);
            consumer.close();
        }
    }

    @Test
    void shouldPaceASlowedProducerToTheConsumersAcks() throws Exception {
        start(Map.of());
        List<FlowState> states = new CopyOnWriteArrayList<>();
        try (Connection c = connect()) {
            c.declareQueue("s", QueueSettings.builder()
                    .set(QueueSettings.QUOTA_SOFT_MESSAGES, 50)
                    .set(QueueSettings.QUOTA_HARD_MESSAGES, 100_000).build());
            Producer p = c.createProducer("s", new ProducerOptions(20, 256, 1 << 20, (q, s, r) -> states.add(s)));
            AtomicLong confirmed = new AtomicLong();
            Thread producer = new Thread(() -> {
                for (int i = 0; i < 2_000; i++) {
                    p.sendAsync(payload(i)).thenRun(confirmed::incrementAndGet);
                }
            });
            producer.start();
            TestAwait.until("slowed", () -> states.contains(FlowState.SLOWED));
            // With no consumer, the producer gets no confirms past the soft level: it stalls there.
            TestAwait.until("producer stalls", () -> backlog("s") >= 50);
            long stalled = backlog("s");
            assertTrue(stalled <= 50 + 20 + 20, "backlog " + stalled + " stops near the soft quota, not the hard one");
            Consumer consumer = c.subscribe("s", new ConsumerOptions(10, 1, Duration.ofMillis(1)));
            int received = 0;
            long maxBacklog = 0;
            while (received < 2_000) {
                Message m = consumer.receive(Duration.ofSeconds(10));
                assertNotNull(m, "received " + received);
                m.ack();
                received++;
                maxBacklog = Math.max(maxBacklog, backlog("s"));
            }
            producer.join();
            TestAwait.until("all confirmed", () -> confirmed.get() == 2_000);
            assertTrue(maxBacklog <= 50 + 20 + 20, "while slowed the producer ran at the consumer's pace; max backlog " + maxBacklog);
            consumer.close();
        }
    }

    @Test
    void shouldRejectPublishesBeyondTheHardQuotaWithThePolicyReject() throws Exception {
        start(Map.of());
        try (Connection c = connect()) {
            c.declareQueue("r", QueueSettings.builder()
                    .set(QueueSettings.QUOTA_HARD_MESSAGES, 10)
                    .set(QueueSettings.OVERFLOW_POLICY, QueueSettings.OVERFLOW_REJECT).build());
            Producer p = c.createProducer("r", new ProducerOptions(1, 256, 1 << 20, null));
            assertEquals(20, sendCountingRejections(p, 30, FlowControlTest::payload));
            assertEquals(10, backlog("r"));
            // Counted on the queue's thread as the refusal is sent: wait for it rather than race it (19 was read once).
            TestAwait.until("20 refusals counted", () -> broker.queues().get("r").publishRefused() == 20);
            assertEquals(20, broker.queues().get("r").publishRefused());
        }
    }

    /**
     * Sends {@code count} messages one at a time; returns how many were refused, each with QUEUE_BLOCKED for the
     * overflow policy reject (the cluster's test checks the same on a leader).
     */
    static int sendCountingRejections(Producer p, int count, java.util.function.IntFunction<byte[]> payload) throws Exception {
        int rejected = 0;
        for (int i = 0; i < count; i++) {
            try {
                p.send(payload.apply(i), Duration.ofSeconds(10));
            } catch (SluiceException e) {
                assertEquals(ErrorCode.QUEUE_BLOCKED, e.errorCode(), e.getMessage());
                assertTrue(e.getMessage().contains("reject"), e.getMessage());
                rejected++;
            }
        }
        return rejected;
    }

    @Test
    void shouldDropTheOldestMessagesAndDeadLetterThemWithThePolicyDropOldest() throws Exception {
        start(Map.of());
        try (Connection c = connect()) {
            c.declareQueue("d", QueueSettings.builder()
                    .set(QueueSettings.QUOTA_HARD_MESSAGES, 10)
                    .set(QueueSettings.OVERFLOW_POLICY, "drop-oldest")
                    .set("deadLetterDropped", true).build());
            Producer p = c.createProducer("d", new ProducerOptions(1, 256, 1 << 20, null));
            for (int i = 0; i < 30; i++) {
                p.send(payload(i), Duration.ofSeconds(10));
            }
            // A dropped message leaves its queue once its dead-letter copy is durable, a moment after.
            TestAwait.until("the dropped ones gone from d", () -> backlog("d") == 10);
            assertEquals(20, broker.queues().get("d").dropped());
            Consumer consumer = c.subscribe("d", ConsumerOptions.DEFAULT);
            List<Long> kept = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                Message m = consumer.receive(Duration.ofSeconds(10));
                kept.add(seqOf(m));
                m.ack();
            }
            assertEquals(List.of(20L, 21L, 22L, 23L, 24L, 25L, 26L, 27L, 28L, 29L), kept, "the newest ten are kept");
            TestAwait.until("dropped ones dead-lettered", () -> broker.queues().get("d.dlq") != null && backlog("d.dlq") == 20);
            consumer.close();
        }
    }

    @Test
    void shouldFailABlockedSendAfterTheBlockedTimeout() throws Exception {
        start(Map.of());
        try (Connection c = connect()) {
            c.declareQueue("t", QueueSettings.builder().set(QueueSettings.QUOTA_HARD_MESSAGES, 5).build());
            Producer p = c.createProducer("t", new ProducerOptions(1, 256, 1 << 20, null).withBlockedTimeout(Duration.ofMillis(300)));
            for (int i = 0; i < 5; i++) {
                p.send(payload(i), Duration.ofSeconds(10));
            }
            TestAwait.until("blocked", () -> broker.queues().get("t").flowState() == FlowState.BLOCKED);
            CompletableFuture<Void> waiting = p.sendAsync(payload(5));
            ExecutionException e = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> waiting.get(10, TimeUnit.SECONDS));
            assertInstanceOf(SluiceTimeoutException.class, e.getCause());
            assertTrue(e.getCause().getMessage().contains("blocked"), e.getCause().getMessage());
            assertEquals(5, backlog("t"), "the timed-out message was never sent");
        }
    }

    @Test
    void shouldNotLetABlockedQueueHoldBackTheSameConnectionsProducersToOtherQueues() throws Exception {
        start(Map.of());
        try (Connection c = connect()) {
            c.declareQueue("full", QueueSettings.builder().set(QueueSettings.QUOTA_HARD_MESSAGES, 5).build());
            c.declareQueue("free", QueueSettings.EMPTY);
            Producer blocked = c.createProducer("full", new ProducerOptions(100, 256, 1 << 20, null));
            for (int i = 0; i < 5; i++) {
                blocked.send(payload(i), Duration.ofSeconds(10));
            }
            TestAwait.until("blocked", () -> broker.queues().get("full").flowState() == FlowState.BLOCKED);
            List<CompletableFuture<Void>> held = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                held.add(blocked.sendAsync(payload(100 + i)));
            }
            Producer other = c.createProducer("free", ProducerOptions.DEFAULT);
            for (int i = 0; i < 100; i++) {
                other.send(payload(i), Duration.ofSeconds(5));
            }
            assertEquals(100, backlog("free"));
            assertTrue(held.stream().noneMatch(CompletableFuture::isDone), "the blocked queue's messages are still held");
            assertEquals(5, backlog("full"));
        }
    }

    /**
     * The broker tells a connection of a queue's flow state once, when it first publishes there: a second producer
     * created on a connection that already heard BLOCKED must start BLOCKED too. Found by a review: it started FREE,
     * sent into the queue's allowance and got QUEUE_BLOCKED errors instead of waiting.
     */
    @Test
    void aProducerCreatedOnAConnectionThatHeardBlockedStartsBlocked() throws Exception {
        start(Map.of());
        List<FlowState> firstStates = new CopyOnWriteArrayList<>();
        List<FlowState> secondStates = new CopyOnWriteArrayList<>();
        try (Connection c = connect()) {
            c.declareQueue("w", QueueSettings.builder().set(QueueSettings.QUOTA_HARD_MESSAGES, 5).build());
            Producer first = c.createProducer("w", new ProducerOptions(20, 256, 1 << 20, (q, s, r) -> firstStates.add(s)));
            for (int i = 0; i < 5; i++) {
                first.send(payload(i));
            }
            TestAwait.until("the first producer hears BLOCKED", () -> firstStates.contains(FlowState.BLOCKED));

            Producer second = c.createProducer("w", new ProducerOptions(20, 256, 1 << 20, (q, s, r) -> secondStates.add(s)));
            TestAwait.until("the second producer starts BLOCKED", () -> secondStates.contains(FlowState.BLOCKED));
            CompletableFuture<Void> held = second.sendAsync(payload(5));
            try (Connection drainer = connect()) {
                Consumer consumer = drainer.subscribe("w", ConsumerOptions.DEFAULT, Message::ack);
                held.get(30, TimeUnit.SECONDS); // sent once the queue is FREE again, not refused
                consumer.close();
            }
            assertEquals(List.of(FlowState.BLOCKED, FlowState.FREE), secondStates);
        }
    }
}
