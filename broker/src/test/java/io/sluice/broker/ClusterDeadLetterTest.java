package io.sluice.broker;

import io.sluice.broker.txn.CrashPoint;
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
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
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
            // Acks are replicated in ACK entries submitted after the ACK frame (rule R5): the leader's store lets the
            // copies go when their entry is applied there, so only then does its commit index cover them.
            TestAwait.until("the leader applying the acks of the six copies", Duration.ofSeconds(30),
                    () -> leader.queues().get(DLQ).messageCount() == 10);
            ClusterFixture.awaitApplied(brokers, leader);
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
        assertEquals(0, cluster.awaitDigest(DLQ, 0, Duration.ofSeconds(60)).get("messages").asLong());
        assertEquals(0, cluster.awaitDigest(SOURCE, 0, Duration.ofSeconds(30)).get("messages").asLong());
    }

    /** Rule R8: a dead-letter queue that does not exist yet is declared by the entry, on every node alike. */
    @Test
    void shouldDeclareAMissingDeadLetterQueueOnEveryNode() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        brokers.addAll(cluster.startInProcess());
        Broker leader = ClusterFixture.awaitLeader(brokers);
        try (Connection connection = Connection.connect(ConnectionOptions.builder().bootstrap(cluster.bootstrap()).build())) {
            connection.declareQueue(SOURCE, QueueSettings.builder().deadLetterQueue("never-declared").build());
            ClusterFixture.publish(connection.createProducer(SOURCE, ProducerOptions.DEFAULT), 0, 3);
            try (Consumer consumer = connection.subscribe(SOURCE, ConsumerOptions.DEFAULT)) {
                for (int i = 0; i < 3; i++) {
                    Message m = consumer.receive(Duration.ofSeconds(10));
                    assertTrue(m != null, "delivery " + i);
                    m.nack(NackAction.REJECT_TO_DEAD_LETTER);
                }
                // The leader declares the queue (through the log) before the first copy: wait for the copies.
                TestAwait.until("the leader moving the three", Duration.ofSeconds(30),
                        () -> leader.queues().get(SOURCE).deadLettered() == 3);
                com.fasterxml.jackson.databind.JsonNode digest = cluster.awaitSameDigest("never-declared", Duration.ofSeconds(30));
                assertEquals(3, digest.get("messages").asLong(), digest.toString());
                assertEquals(0, cluster.awaitDigest(SOURCE, 0, Duration.ofSeconds(30)).get("messages").asLong());
            }
        }
    }

    /**
     * The dead-letter queue's own quota holds on a cluster as on a single broker (docs/flow-control.md): the leader
     * checks it before it submits the dead-letter (rule R8), and a copy it refuses leaves the original in its source,
     * on every node. On main the six copies went into a dead-letter queue whose hard quota is three.
     */
    @Test
    void shouldRefuseDeadLetterCopiesPastTheDeadLetterQueuesQuotaOnEveryNode() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        brokers.addAll(cluster.startInProcess());
        Broker leader = ClusterFixture.awaitLeader(brokers);
        try (Connection connection = Connection.connect(ConnectionOptions.builder().bootstrap(cluster.bootstrap())
                .requestTimeout(Duration.ofSeconds(30)).build())) {
            connection.declareQueue(DLQ, QueueSettings.builder().set(QueueSettings.QUOTA_HARD_MESSAGES, 3)
                    .set(QueueSettings.OVERFLOW_POLICY, QueueSettings.OVERFLOW_REJECT).build());
            connection.declareQueue(SOURCE, QueueSettings.builder().deadLetterQueue(DLQ).build());
            ClusterFixture.publish(connection.createProducer(SOURCE, ProducerOptions.DEFAULT), 0, 6);
            try (Consumer consumer = connection.subscribe(SOURCE, ConsumerOptions.DEFAULT.withCredit(6))) {
                for (int i = 0; i < 6; i++) {
                    Message m = consumer.receive(Duration.ofSeconds(10));
                    assertTrue(m != null, "delivery " + i);
                    m.nack(NackAction.REJECT_TO_DEAD_LETTER);
                }
                TestAwait.until("the leader settling the six moves", Duration.ofSeconds(30), () -> {
                    var source = leader.queues().get(SOURCE);
                    return source.deadLettered() + source.deadLetterFailures() >= 6;
                });
            }
            assertEquals(3, leader.queues().get(SOURCE).deadLettered(), "copies the dead-letter queue's quota let in");
            assertEquals(3, leader.queues().get(DLQ).publishRefused(), "copies refused by the dead-letter queue's quota");
        }
        assertEquals(3, cluster.awaitDigest(DLQ, 3, Duration.ofSeconds(30)).get("messages").asLong(),
                "the dead-letter queue holds its hard quota on every node");
        assertEquals(3, cluster.awaitDigest(SOURCE, 3, Duration.ofSeconds(30)).get("messages").asLong(),
                "the refused originals stay in the source on every node");
    }

    /**
     * Rule R8's replay: a node that crashes once a dead-letter copy is durable and before the original's ack (the crash
     * point halts a child JVM there, as kill -9 would) replays the entry when it starts again; it must not store the
     * copy a second time, which would shift the dead-letter queue's later ids on that node alone (its digest shows it).
     */
    @Test
    void shouldStoreADeadLetterCopyOnceOnANodeThatCrashedBeforeTheOriginalsAck() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        Process[] processes = new Process[3];
        try {
            brokers.addAll(cluster.startInProcess(2)); // a leader among the first two, which the crash point spares
            ClusterFixture.awaitLeader(brokers);
            cluster.startChild(2, processes, List.of("-Dsluice.crash-point=" + CrashPoint.CLUSTER_DEAD_LETTER_COPY_DURABLE));
            try (Connection connection = Connection.connect(ConnectionOptions.builder().bootstrap(cluster.bootstrap())
                    .requestTimeout(Duration.ofSeconds(30)).build())) {
                connection.declareQueue(DLQ, QueueSettings.EMPTY);
                connection.declareQueue(SOURCE, QueueSettings.builder().deadLetterQueue(DLQ).build());
                Producer toDlq = connection.createProducer(DLQ, ProducerOptions.DEFAULT);
                ClusterFixture.publish(toDlq, DIRECT, 5);
                ClusterFixture.publish(connection.createProducer(SOURCE, ProducerOptions.DEFAULT), 0, 3);
                try (Consumer consumer = connection.subscribe(SOURCE, ConsumerOptions.DEFAULT.withCredit(1))) {
                    Message m = consumer.receive(Duration.ofSeconds(10));
                    assertTrue(m != null, "a delivery of the source");
                    m.nack(NackAction.REJECT_TO_DEAD_LETTER);
                    assertTrue(processes[2].waitFor(60, TimeUnit.SECONDS), "node 3 halted at the crash point; its log: "
                            + ChildJvm.tail(cluster.log(2)));
                    assertEquals(137, processes[2].exitValue(), ChildJvm.tail(cluster.log(2)));
                }
                ClusterFixture.publish(toDlq, DIRECT + 5, 5); // after the copy: their ids would shift on node 3
            }
            cluster.startChild(2, processes); // replays the log, the dead-letter among it
            assertEquals(11, cluster.awaitDigest(DLQ, 11, Duration.ofSeconds(60)).get("messages").asLong(),
                    "ten direct messages and one copy on every node");
            assertEquals(2, cluster.awaitDigest(SOURCE, 2, Duration.ofSeconds(30)).get("messages").asLong());
        } finally {
            ChildJvm.killAll(processes);
        }
    }

    /**
     * Rule R10 of docs/replication.md: the leader replicates its deliveries, so after a failover the new leader delivers
     * an unsettled message with the delivery count it had (redelivered) and dead-letters it at maxDeliveries counted
     * across the failover. Before R10 the new leader delivered it as new (count 1), and a poison message could be
     * delivered maxDeliveries more times per failover.
     */
    @Test
    void shouldDeliverWithTheReplicatedCountAfterAFailoverAndDeadLetterAtMaxDeliveries() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        brokers.addAll(cluster.startInProcess());
        Broker leader = ClusterFixture.awaitLeader(brokers);
        try (Connection connection = Connection.connect(ConnectionOptions.builder().bootstrap(cluster.bootstrap())
                .requestTimeout(Duration.ofSeconds(30)).build())) {
            connection.declareQueue(DLQ, QueueSettings.EMPTY);
            connection.declareQueue(SOURCE, QueueSettings.builder().maxDeliveries(3).deadLetterQueue(DLQ).build());
            ClusterFixture.publish(connection.createProducer(SOURCE, ProducerOptions.DEFAULT), 0, 1);
            long id = -1;
            try (Consumer consumer = connection.subscribe(SOURCE, ConsumerOptions.DEFAULT.withCredit(1))) {
                for (int delivery = 1; delivery <= 2; delivery++) { // delivered twice on the old leader, requeued each time
                    Message m = consumer.receive(Duration.ofSeconds(10));
                    assertNotNull(m, "delivery " + delivery + " on the old leader");
                    assertEquals(delivery, m.deliveryCount());
                    id = m.id();
                    m.nack(NackAction.REQUEUE);
                }
            }
            assertEquals(2, leader.queues().get(SOURCE).store().deliveryCount(id));
            ClusterFixture.awaitDeliveriesReplicated(brokers, leader, SOURCE, List.of(id)); // best effort: let every node apply them
        }

        leader.close();
        brokers.remove(leader);
        Broker next = ClusterFixture.awaitLeader(brokers);
        try (Connection connection = Connection.connect(ConnectionOptions.builder()
                .bootstrap(List.of("127.0.0.1:" + brokers.get(0).port(), "127.0.0.1:" + brokers.get(1).port()))
                .requestTimeout(Duration.ofSeconds(30)).build())) {
            assertEquals(next.config().broker.name, connection.brokerName());
            try (Consumer consumer = connection.subscribe(SOURCE, ConsumerOptions.DEFAULT.withCredit(1))) {
                Message m = consumer.receive(Duration.ofSeconds(10));
                assertNotNull(m, "the message delivered by the new leader");
                assertEquals(3, m.deliveryCount(), "the delivery count across the failover (above 1: redelivered)");
                m.nack(NackAction.REQUEUE); // a fourth delivery would exceed maxDeliveries 3: dead-lettered instead
                assertNull(consumer.receive(Duration.ofSeconds(3)), "no fourth delivery");
            }
            TestAwait.until("the new leader dead-lettering the message", Duration.ofSeconds(30),
                    () -> next.queues().get(SOURCE).deadLettered() == 1);
        }
        for (Broker b : brokers) {
            TestAwait.until(b.config().broker.name + " holding the copy alone", Duration.ofSeconds(30),
                    () -> b.queues().get(DLQ).messageCount() == 1 && b.queues().get(SOURCE).messageCount() == 0);
        }
    }

    /** Rule R10: the replicated delivery counts are in every node's store, so they survive a restart of the whole cluster. */
    @Test
    void shouldKeepTheReplicatedDeliveryCountsAcrossARestartOfEveryNode() throws Exception {
        long id = -1;
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        brokers.addAll(cluster.startInProcess());
        Broker leader = ClusterFixture.awaitLeader(brokers);
        try (Connection connection = Connection.connect(ConnectionOptions.builder().bootstrap(cluster.bootstrap()).build())) {
            connection.declareQueue(SOURCE, QueueSettings.EMPTY);
            ClusterFixture.publish(connection.createProducer(SOURCE, ProducerOptions.DEFAULT), 0, 1);
            try (Consumer consumer = connection.subscribe(SOURCE, ConsumerOptions.DEFAULT.withCredit(1))) {
                for (int delivery = 1; delivery <= 2; delivery++) {
                    Message m = consumer.receive(Duration.ofSeconds(10));
                    assertNotNull(m, "delivery " + delivery);
                    id = m.id();
                    m.nack(NackAction.REQUEUE);
                }
            }
            assertEquals(2, leader.queues().get(SOURCE).store().deliveryCount(id));
            ClusterFixture.awaitDeliveriesReplicated(brokers, leader, SOURCE, List.of(id));
        }
        for (Broker b : brokers) {
            b.close();
        }
        brokers.clear();
        brokers.addAll(cluster.startInProcess());
        for (Broker b : brokers) { // before anything is delivered again: what each node's own store kept
            assertEquals(2, b.queues().get(SOURCE).store().deliveryCount(id), b.config().broker.name + "'s count of message " + id);
        }
        ClusterFixture.awaitLeader(brokers);
        try (Connection connection = Connection.connect(ConnectionOptions.builder().bootstrap(cluster.bootstrap()).build());
             Consumer consumer = connection.subscribe(SOURCE, ConsumerOptions.DEFAULT.withCredit(1))) {
            Message m = consumer.receive(Duration.ofSeconds(30));
            assertNotNull(m, "the message after the restart");
            assertEquals(3, m.deliveryCount(), "delivered twice before the restart, whichever node leads now");
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
