package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
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

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R5 of docs/replication.md: a leader stores a consumer's acks when their entry is applied, as every node
 * does, not when it settles them. A leader cut off from both followers settles a consumer's acks, which never
 * commit; the followers elect a leader of their own, and when the old leader comes back its store holds what
 * theirs hold: no node has dropped messages the others keep (equal digests), and the messages whose acks were
 * lost are delivered again, as redelivered (at-least-once).
 */
@Tag("cluster")
@Timeout(180)
class ClusterAckCommitTest {
    @TempDir
    Path dir;
    private final List<Broker> running = new ArrayList<>();

    @AfterEach
    void stop() {
        for (Broker broker : running) {
            broker.close();
        }
    }

    @Test
    void acksALeaderSettledAloneAreNotStoredAndEveryNodeKeepsTheSameMessages() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        List<Broker> brokers = cluster.startInProcess();
        running.addAll(brokers);
        Broker leader = ClusterFixture.awaitLeader(brokers);
        int leaderIndex = brokers.indexOf(leader);
        int total = 100;
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            c.declareQueue("q", QueueSettings.EMPTY);
            Producer producer = c.createProducer("q", ProducerOptions.DEFAULT);
            ClusterFixture.publish(producer, 0, total);
        }
        ClusterFixture.awaitApplied(brokers, leader);

        // A consumer on the leader holds every message; then both followers stop, and it acks them all.
        List<String> leaderOnly = List.of("127.0.0.1:" + cluster.clientPorts[leaderIndex]);
        try (Connection c = Connection.connect(ConnectionOptions.builder().bootstrap(leaderOnly).build())) {
            Consumer consumer = c.subscribe("q", new ConsumerOptions(total, 128, Duration.ofMillis(1)));
            List<Message> held = new ArrayList<>();
            while (held.size() < total) {
                Message m = consumer.receive(Duration.ofSeconds(30));
                assertNotNull(m, "only " + held.size() + " delivered");
                held.add(m);
            }
            ClusterFixture.awaitDeliveriesReplicated(brokers, leader, "q", held.stream().map(Message::id).toList()); // R10's entries
            cluster.closeAllBut(brokers, leaderIndex, running);
            held.forEach(Message::ack);
            TestAwait.until("the cut-off leader settling the acks", Duration.ofSeconds(30), () -> {
                com.fasterxml.jackson.databind.JsonNode q = cluster.get(leaderIndex, "/api/queues/q");
                return q != null && q.get("unackedMessages").asLong() == 0;
            });
        }
        leader.close();
        running.remove(leader);

        // The followers elect a leader of their own; the old leader comes back as a follower.
        List<Broker> restarted = cluster.restartFollowersThenOldLeader(leaderIndex, running);

        assertEquals(total, cluster.awaitDigest("q", total, Duration.ofSeconds(30)).get("messages").asLong(),
                "every node keeps the messages whose acks never committed");
        Set<Integer> again = new TreeSet<>();
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            Consumer consumer = c.subscribe("q", new ConsumerOptions(total, 128, Duration.ofMillis(1)));
            while (again.size() < total) {
                Message m = consumer.receive(Duration.ofSeconds(30));
                assertNotNull(m, "only " + again.size() + " delivered again");
                assertEquals(2, m.deliveryCount(), "delivered once before, on the old leader");
                again.add((int) Payloads.sequence(m.payload()));
                m.ack();
            }
            int served = ClusterFixture.awaitLeader(restarted).config().cluster.nodeId - 1;
            TestAwait.until("the new leader settling the acks", Duration.ofSeconds(30), () -> {
                com.fasterxml.jackson.databind.JsonNode q = cluster.get(served, "/api/queues/q");
                return q != null && q.get("unackedMessages").asLong() == 0;
            });
        }
        assertEquals(total, again.size());
        for (int i = 0; i < 3; i++) {
            int node = i;
            TestAwait.until("node " + (i + 1) + " applying the acks of the second delivery", Duration.ofSeconds(30), () -> {
                com.fasterxml.jackson.databind.JsonNode digest = cluster.get(node, "/api/queues/q/digest");
                return digest != null && digest.get("messages").asLong() == 0;
            });
        }
    }

    /**
     * A leader deposed while its consumer holds messages (the leadership moved, the node stays up) hands them back
     * to its ready list; as a follower it must store the new leader's acks of them when it applies their entry, as
     * the other follower does, or its store keeps messages every other node acknowledged.
     */
    @Test
    void aDeposedLeaderStoresTheNewLeadersAcksOfTheMessagesItsConsumerHeld() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        List<Broker> brokers = cluster.startInProcess();
        running.addAll(brokers);
        Broker leader = ClusterFixture.awaitLeader(brokers);
        int leaderIndex = brokers.indexOf(leader);
        int targetIndex = (leaderIndex + 1) % 3;
        int total = 20;
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            c.declareQueue("held", QueueSettings.EMPTY);
            Producer producer = c.createProducer("held", ProducerOptions.DEFAULT);
            ClusterFixture.publish(producer, 0, total);
            Consumer consumer = c.subscribe("held", new ConsumerOptions(total, 128, Duration.ofMillis(1)));
            Set<Integer> first = new TreeSet<>();
            while (first.size() < total) {
                Message m = consumer.receive(Duration.ofSeconds(30));
                assertNotNull(m, "only " + first.size() + " delivered");
                first.add((int) Payloads.sequence(m.payload()));
            }
            // Held, not acked; the operator moves the leadership; the client follows it and is delivered them again.
            cluster.moveLeader(leaderIndex, targetIndex);
            Set<Integer> again = new TreeSet<>();
            while (again.size() < total) {
                Message m = consumer.receive(Duration.ofSeconds(30));
                assertNotNull(m, "only " + again.size() + " delivered again by the new leader");
                again.add((int) Payloads.sequence(m.payload()));
                m.ack();
            }
            TestAwait.until("the new leader settling the acks", Duration.ofSeconds(30), () -> {
                com.fasterxml.jackson.databind.JsonNode q = cluster.get(targetIndex, "/api/queues/held");
                return q != null && q.get("unackedMessages").asLong() == 0;
            });
        }
        assertEquals(0, cluster.awaitDigest("held", 0, Duration.ofSeconds(30)).get("messages").asLong(),
                "every node, the deposed leader too, stores the acks");
    }
}
