package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R9 of docs/replication.md: on a cluster the leader applies the queue's quota before it submits a PUBLISH
 * (docs/flow-control.md: the same FLOW states, reasons and errors as a single broker), the followers store what was
 * committed, and the bytes submitted and not yet applied count toward the same states, with a bound.
 */
@Tag("cluster")
@Timeout(180)
class ClusterFlowControlTest {
    @TempDir
    Path dir;
    private final List<Broker> brokers = new ArrayList<>();

    @AfterEach
    void stop() {
        for (Broker broker : brokers) {
            broker.close();
        }
    }

    private record Told(FlowState state, String reason) {
    }

    /** Three nodes in this JVM with these more {@code cluster} keys. */
    private ClusterFixture start(String clusterKeys) throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3, clusterKeys);
        brokers.addAll(cluster.startInProcess());
        return cluster;
    }

    @Test
    void shouldBlockAProducerAtTheHardQuotaAndResumeOnceAConsumerDrains() throws Exception {
        ClusterFixture cluster = start("");
        ClusterFixture.awaitLeader(brokers);
        List<Told> told = new CopyOnWriteArrayList<>();
        try (Connection c = Connection.connect(ConnectionOptions.builder().bootstrap(cluster.bootstrap()).build())) {
            c.declareQueue("w", QueueSettings.builder().set(QueueSettings.QUOTA_HARD_MESSAGES, 100).build());
            Producer p = c.createProducer("w", new ProducerOptions(20, 256, 1 << 20, (q, s, r) -> told.add(new Told(s, r))));
            List<CompletableFuture<Void>> sent = new CopyOnWriteArrayList<>();
            Thread producer = new Thread(() -> {
                for (int i = 0; i < 300; i++) {
                    sent.add(p.sendAsync(Payloads.of(i)));
                }
            });
            producer.start();
            TestAwait.until("producer told it is blocked", Duration.ofSeconds(30),
                    () -> told.stream().anyMatch(t -> t.state() == FlowState.BLOCKED));
            Told blocked = told.stream().filter(t -> t.state() == FlowState.BLOCKED).findFirst().orElseThrow();
            assertTrue(blocked.reason().contains("hard quota of 100 messages"), blocked.reason());
            TestAwait.until("producer stalls", Duration.ofSeconds(30),
                    () -> sent.size() >= 100 + 20 && producer.getState() == Thread.State.WAITING);
            assertTrue(sent.size() < 300, "the producer waits while blocked: " + sent.size() + " of 300 handed over");
            long maxBacklog = maxBacklog(cluster, "w");
            assertTrue(maxBacklog >= 100 && maxBacklog <= 100 + 20, "backlog " + maxBacklog + " is the hard quota plus at most in flight");

            Set<Long> received = new TreeSet<>();
            try (Consumer consumer = c.subscribe("w", new ConsumerOptions(50, 16, Duration.ofMillis(1)))) {
                while (received.size() < 300) {
                    Message m = consumer.receive(Duration.ofSeconds(20));
                    assertNotNull(m, "received " + received.size() + " of 300");
                    received.add(Payloads.sequence(m.payload()));
                    m.ack();
                    maxBacklog = Math.max(maxBacklog, maxBacklog(cluster, "w"));
                }
            }
            producer.join(10_000);
            CompletableFuture.allOf(sent.toArray(new CompletableFuture[0])).get(30, TimeUnit.SECONDS);
            assertEquals(300, received.size(), "nothing lost");
            assertTrue(maxBacklog <= 120, "backlog never above hard quota plus in flight, on any node: " + maxBacklog);
            List<FlowState> states = told.stream().map(Told::state).toList();
            assertTrue(states.subList(states.indexOf(FlowState.BLOCKED), states.size()).contains(FlowState.FREE),
                    "resumed after the drain: " + told);
            assertEquals(0, cluster.awaitDigest("w", 0, Duration.ofSeconds(30)).get("messages").asLong());
        }
    }

    /**
     * A resend of a message the queue holds is confirmed, as a single broker confirms it, even while the quota
     * refuses new messages: refused with QUEUE_BLOCKED, its producer would take a stored message for one refused.
     */
    @Test
    void shouldConfirmAResendOfAStoredMessageWhileTheQuotaRefusesNewOnes() throws Exception {
        ClusterFixture cluster = start("");
        Broker leader = ClusterFixture.awaitLeader(brokers);
        long producer = 0x5EED_0020L;
        try (RawClient raw = RawClient.connected(leader.port())) {
            raw.send(new DeclareQueueFrame(1, "resend", QueueSettings.builder()
                    .set(QueueSettings.QUOTA_HARD_MESSAGES, 5)
                    .set(QueueSettings.OVERFLOW_POLICY, QueueSettings.OVERFLOW_REJECT).build()));
            raw.expect(OkFrame.class);
            publish(raw, "resend", producer, 1, 2, 3, 4, 5);
            assertEquals(java.util.Map.of(1L, "confirmed", 2L, "confirmed", 3L, "confirmed", 4L, "confirmed", 5L, "confirmed"),
                    outcomes(raw, 5));

            publish(raw, "resend", producer, 3); // a resend, the queue at its hard quota
            assertEquals(java.util.Map.of(3L, "confirmed"), outcomes(raw, 1));
            publish(raw, "resend", producer, 6); // a new message: refused
            assertEquals(java.util.Map.of(6L, "QUEUE_BLOCKED"), outcomes(raw, 1));
            publish(raw, "resend", producer, 4, 7); // one frame, a resend and a new message
            assertEquals(java.util.Map.of(4L, "confirmed", 7L, "QUEUE_BLOCKED"), outcomes(raw, 2));
        }
        assertEquals(5, cluster.awaitDigest("resend", 5, Duration.ofSeconds(30)).get("messages").asLong(),
                "every node holds the five messages once");
    }

    private static void publish(RawClient raw, String queue, long producer, long... sequences) {
        PublishFrameBuilder frame = new PublishFrameBuilder(raw.alloc(), queue);
        for (long sequence : sequences) {
            frame.add(producer, sequence, List.of(), Payloads.of((int) sequence));
        }
        raw.send(frame.build());
    }

    /** What became of the next {@code count} sequences answered: "confirmed" or the refusal's code; FLOW frames skipped. */
    private static java.util.Map<Long, String> outcomes(RawClient raw, int count) throws InterruptedException {
        java.util.Map<Long, String> outcomes = new java.util.TreeMap<>();
        while (outcomes.size() < count) {
            Object frame = raw.expect(Object.class);
            if (frame instanceof ConfirmFrame confirm) {
                confirm.sequences().forEach(r -> {
                    for (long s = r.from(); s <= r.to(); s++) {
                        outcomes.put(s, "confirmed");
                    }
                });
            } else if (frame instanceof PublishErrorFrame error) {
                for (long s = error.sequences().from(); s <= error.sequences().to(); s++) {
                    outcomes.put(s, ErrorCode.fromCode(error.code()).name());
                }
            }
        }
        return outcomes;
    }

    @Test
    void shouldRejectPublishesBeyondTheHardQuotaWithThePolicyReject() throws Exception {
        ClusterFixture cluster = start("");
        Broker leader = ClusterFixture.awaitLeader(brokers);
        try (Connection c = Connection.connect(ConnectionOptions.builder().bootstrap(cluster.bootstrap()).build())) {
            c.declareQueue("r", QueueSettings.builder()
                    .set(QueueSettings.QUOTA_HARD_MESSAGES, 10)
                    .set(QueueSettings.OVERFLOW_POLICY, QueueSettings.OVERFLOW_REJECT).build());
            Producer p = c.createProducer("r", new ProducerOptions(1, 256, 1 << 20, null));
            assertEquals(20, FlowControlTest.sendCountingRejections(p, 30, Payloads::of));
            assertEquals(20, leader.queues().get("r").publishRefused());
            assertEquals(10, cluster.awaitDigest("r", 10, Duration.ofSeconds(30)).get("messages").asLong());
        }
    }

    /** Rule R9: drop-oldest's drops are the leader's decision, replicated: every node keeps the same newest ten. */
    @Test
    void shouldDropTheSameOldestMessagesOnEveryNode() throws Exception {
        ClusterFixture cluster = start("");
        Broker leader = ClusterFixture.awaitLeader(brokers);
        try (Connection c = Connection.connect(ConnectionOptions.builder().bootstrap(cluster.bootstrap()).build())) {
            c.declareQueue("d", QueueSettings.builder()
                    .set(QueueSettings.QUOTA_HARD_MESSAGES, 10)
                    .set(QueueSettings.OVERFLOW_POLICY, "drop-oldest").build());
            Producer p = c.createProducer("d", new ProducerOptions(1, 256, 1 << 20, null));
            for (int i = 0; i < 30; i++) {
                p.send(Payloads.of(i), Duration.ofSeconds(10));
            }
            assertEquals(20, leader.queues().get("d").dropped());
            com.fasterxml.jackson.databind.JsonNode digest = cluster.awaitSameDigest("d", Duration.ofSeconds(30));
            assertEquals(10, digest.get("messages").asLong(), digest.toString());
            List<Long> kept = new ArrayList<>();
            try (Consumer consumer = c.subscribe("d", ConsumerOptions.DEFAULT)) {
                for (int i = 0; i < 10; i++) {
                    Message m = consumer.receive(Duration.ofSeconds(10));
                    assertNotNull(m, "received " + i + " of 10");
                    kept.add(Payloads.sequence(m.payload()));
                    m.ack();
                }
            }
            assertEquals(List.of(20L, 21L, 22L, 23L, 24L, 25L, 26L, 27L, 28L, 29L), kept, "the newest ten are kept");
            assertEquals(0, cluster.awaitDigest("d", 0, Duration.ofSeconds(30)).get("messages").asLong());
        }
    }

    /**
     * Rule R9's bound: with both followers down nothing commits, so what the leader submitted stays uncommitted; past
     * cluster.max-uncommitted-bytes the producer is told BLOCKED, with the reason, instead of the leader's memory
     * growing. Once the followers are back everything sent is stored, once, on every node.
     */
    @Test
    void shouldBlockProducersWhileTheLogCannotCommit() throws Exception {
        ClusterFixture cluster = start("  max-uncommitted-bytes: 2048\n");
        Broker leader = ClusterFixture.awaitLeader(brokers);
        List<Told> told = new CopyOnWriteArrayList<>();
        ConnectionOptions options = ConnectionOptions.builder().bootstrap(cluster.bootstrap())
                .requestTimeout(Duration.ofSeconds(60)).connectTimeout(Duration.ofSeconds(60)).build();
        try (Connection c = Connection.connect(options)) {
            c.declareQueue("u", QueueSettings.EMPTY);
            Producer p = c.createProducer("u", new ProducerOptions(400, 256, 1 << 20, (q, s, r) -> told.add(new Told(s, r))));
            List<Integer> down = new ArrayList<>();
            for (int i = 0; i < brokers.size(); i++) {
                if (brokers.get(i) != leader) {
                    brokers.get(i).close();
                    down.add(i);
                }
            }
            List<CompletableFuture<Void>> sent = new ArrayList<>();
            for (int i = 0; i < 400; i++) {
                sent.add(p.sendAsync(Payloads.of(i)));
            }
            TestAwait.until("producer told it is blocked", Duration.ofSeconds(30),
                    () -> told.stream().anyMatch(t -> t.state() == FlowState.BLOCKED));
            Told blocked = told.stream().filter(t -> t.state() == FlowState.BLOCKED).findFirst().orElseThrow();
            assertTrue(blocked.reason().contains("max-uncommitted-bytes"), blocked.reason());
            for (int i : down) {
                brokers.set(i, Broker.start(cluster.config(i)));
            }
            CompletableFuture.allOf(sent.toArray(new CompletableFuture[0])).get(120, TimeUnit.SECONDS);
            assertEquals(400, cluster.awaitDigest("u", 400, Duration.ofSeconds(60)).get("messages").asLong());
        }
    }

    /** The largest backlog any node reports for {@code queue} now (-1 if none answers). */
    private static long maxBacklog(ClusterFixture cluster, String queue) {
        long max = -1;
        for (int i = 0; i < cluster.size; i++) {
            max = Math.max(max, cluster.backlog(i, queue));
        }
        return max;
    }
}
