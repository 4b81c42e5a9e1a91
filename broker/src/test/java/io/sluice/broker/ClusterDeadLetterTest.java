package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.NackAction;
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
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R8 of docs/replication.md: a dead-letter is the leader's decision, replicated, so the dead-letter queue
 * holds the same messages under the same ids on every node and the source lets go of the message on every node.
 * Before R8 the copy was stored on the leader alone: the ids of the dead-letter queue's later messages differed
 * between nodes, and a consumer's acks of the copies (replicated by id) acked other, unconsumed messages on the
 * followers, which were lost with the leader.
 */
@Tag("cluster")
@Timeout(180)
class ClusterDeadLetterTest {
    private static final String SOURCE = "work";
    private static final String DLQ = "work-dlq";
    /** Direct publishes to the dead-letter queue carry 1000 and up; the source's messages 0 and up. */
    private static final long DIRECT = 1000;

    @TempDir
    Path dir;
    private final List<Broker> brokers = new ArrayList<>();

    @AfterEach
    void stop() {
        for (Broker broker : brokers) {
            broker.close();
        }
    }

    @Test
    void shouldDeadLetterOnEveryNodeSoThatAcksOfTheCopiesAckThemEverywhere() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        brokers.addAll(cluster.startInProcess());
        Broker leader = ClusterFixture.awaitLeader(brokers);
        ConnectionOptions options = ConnectionOptions.builder().bootstrap(cluster.bootstrap())
                .requestTimeout(Duration.ofSeconds(30)).build();
        try (Connection connection = Connection.connect(options)) {
            assertEquals(leader.config().broker.name, connection.brokerName());
            connection.declareQueue(DLQ, QueueSettings.EMPTY);
            connection.declareQueue(SOURCE, QueueSettings.builder().maxDeliveries(2).deadLetterQueue(DLQ).build());
            Producer toDlq = connection.createProducer(DLQ, ProducerOptions.DEFAULT);
            Producer toSource = connection.createProducer(SOURCE, ProducerOptions.DEFAULT);
            ClusterFixture.publish(toDlq, DIRECT, 5);
            ClusterFixture.publish(toSource, 0, 10);

            // 0..3 rejected to the dead-letter queue, 4..5 nacked until they exceed maxDeliveries, 6..9 acked.
            Set<Long> deadLettered = new TreeSet<>();
            try (Consumer consumer = connection.subscribe(SOURCE, ConsumerOptions.DEFAULT.withCredit(10))) {
                int settled = 0;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (settled < 10 && System.nanoTime() < deadline) {
                    Message m = consumer.receive(Duration.ofSeconds(1));
                    if (m == null) {
                        continue;
                    }
                    long n = Payloads.sequence(m.payload());
                    if (n < 4) {
                        m.nack(NackAction.REJECT_TO_DEAD_LETTER);
                        deadLettered.add(n);
                        settled++;
                    } else if (n < 6) {
                        m.nack(NackAction.REQUEUE); // the third delivery would exceed 2: dead-lettered instead
                        if (m.deliveryCount() == 2) {
                            deadLettered.add(n);
                            settled++;
                        }
                    } else {
                        m.ack();
                        settled++;
                    }
                }
                assertEquals(10, settled, "every source message settled by the consumer");
                // A message goes past maxDeliveries when the queue would deliver it again, to a consumer it has.
                TestAwait.until("the leader holding no source message", Duration.ofSeconds(30),
                        () -> leader.queues().get(SOURCE).messageCount() == 0);
            }
            // More direct publishes after the copies, then a consumer acks the copies alone.
            ClusterFixture.publish(toDlq, DIRECT + 5, 5);
            Set<Long> copiesAcked = new TreeSet<>();
            try (Consumer consumer = connection.subscribe(DLQ, ConsumerOptions.DEFAULT.withCredit(100))) {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                int seen = 0;
                while (seen < 16 && System.nanoTime() < deadline) {
                    Message m = consumer.receive(Duration.ofSeconds(1));
                    if (m == null) {
                        continue;
                    }
                    seen++;
                    if (m.header("x-dead-letter-from").isPresent()) {
                        assertEquals(SOURCE, m.header("x-dead-letter-from").get());
                        copiesAcked.add(Payloads.sequence(m.payload()));
                        m.ack();
                    }
                }
                assertEquals(16, seen, "the dead-letter queue's 10 direct messages and 6 copies delivered");
            }
            assertEquals(deadLettered, copiesAcked, "the copies are those dead-lettered");
            long committed = leader.cluster().commitIndex();
            for (Broker b : brokers) {
                TestAwait.until(b.config().broker.name + " applying through " + committed, Duration.ofSeconds(30),
                        () -> b.cluster().appliedIndex() >= committed);
            }
        }

        // The leader goes; the new one must deliver exactly the ten direct messages, and nothing of the source.
        leader.close();
        brokers.remove(leader);
        Broker next = ClusterFixture.awaitLeader(brokers);
        ConnectionOptions survivors = ConnectionOptions.builder()
                .bootstrap(List.of("127.0.0.1:" + brokers.get(0).port(), "127.0.0.1:" + brokers.get(1).port()))
                .requestTimeout(Duration.ofSeconds(30)).build();
        try (Connection connection = Connection.connect(survivors)) {
            assertEquals(next.config().broker.name, connection.brokerName());
            Set<Long> expected = new TreeSet<>();
            for (long n = DIRECT; n < DIRECT + 10; n++) {
                expected.add(n);
            }
            assertEquals(expected, drain(connection, DLQ), "the dead-letter queue's unacked messages after the failover");
            assertEquals(Set.of(), drain(connection, SOURCE), "source messages delivered again after the failover");
        }

        // The old leader comes back (replaying the log after its marker: a dead-letter is applied once) and
        // holds what the others hold (rule R6): both queues empty, every node at the same ids.
        int back = cluster.clientPorts[0] == leader.port() ? 0 : cluster.clientPorts[1] == leader.port() ? 1 : 2;
        brokers.add(Broker.start(cluster.config(back)));
        assertEquals(0, cluster.awaitSameDigest(DLQ, Duration.ofSeconds(60)).get("messages").asLong());
        assertEquals(0, cluster.awaitSameDigest(SOURCE, Duration.ofSeconds(30)).get("messages").asLong());
    }

    /** Rule R8: a dead-letter queue that does not exist yet is declared by the entry, on every node alike. */
    @Test
    void shouldDeclareAMissingDeadLetterQueueOnEveryNode() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        brokers.addAll(cluster.startInProcess());
        ClusterFixture.awaitLeader(brokers);
        try (Connection connection = Connection.connect(ConnectionOptions.builder().bootstrap(cluster.bootstrap()).build())) {
            connection.declareQueue(SOURCE, QueueSettings.builder().deadLetterQueue("never-declared").build());
            ClusterFixture.publish(connection.createProducer(SOURCE, ProducerOptions.DEFAULT), 0, 3);
            try (Consumer consumer = connection.subscribe(SOURCE, ConsumerOptions.DEFAULT)) {
                for (int i = 0; i < 3; i++) {
                    Message m = consumer.receive(Duration.ofSeconds(10));
                    assertTrue(m != null, "delivery " + i);
                    m.nack(NackAction.REJECT_TO_DEAD_LETTER);
                }
                com.fasterxml.jackson.databind.JsonNode digest = cluster.awaitSameDigest("never-declared", Duration.ofSeconds(30));
                assertEquals(3, digest.get("messages").asLong(), digest.toString());
                assertEquals(0, cluster.awaitSameDigest(SOURCE, Duration.ofSeconds(30)).get("messages").asLong());
            }
        }
    }

    /** Every message the queue delivers within a quiet second, acked; their payloads' numbers. */
    private static Set<Long> drain(Connection connection, String queue) throws Exception {
        Set<Long> got = new TreeSet<>();
        try (Consumer consumer = connection.subscribe(queue, ConsumerOptions.DEFAULT)) {
            Message m;
            while ((m = consumer.receive(Duration.ofSeconds(2))) != null) {
                got.add(Payloads.sequence(m.payload()));
                m.ack();
            }
        }
        return got;
    }
}
