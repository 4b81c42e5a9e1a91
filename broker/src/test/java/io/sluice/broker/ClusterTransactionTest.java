package io.sluice.broker;

import com.fasterxml.jackson.databind.JsonNode;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionLostException;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.SluiceException;
import io.sluice.client.Transaction;
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
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R13 of docs/replication.md: a transaction on a cluster commits as one log entry, so every node holds all of it or
 * none of it. Three nodes in this JVM, the Java client's {@link Transaction} (which a broker that does not grant the
 * TRANSACTIONS capability refuses with UnsupportedOperationException: on main every cluster node refused it).
 */
@Tag("cluster")
@Timeout(240)
class ClusterTransactionTest {
    private static final Duration PATIENCE = Duration.ofSeconds(30);

    @TempDir
    Path dir;
    private final List<Broker> running = new ArrayList<>();

    @AfterEach
    void stop() {
        for (Broker broker : running) {
            broker.close();
        }
    }

    /**
     * A transaction acknowledges a delivery of "a" and publishes to "b" and "c": committed, every node holds exactly that
     * (digests agree on the counts, and consuming from the leader finds exactly the published payloads and headers). A second one
     * that acknowledges the other delivery and publishes to "b" is rolled back: nothing of it is stored anywhere, and the
     * held message is delivered again with a delivery count one higher.
     */
    @Test
    void aCommitIsOnEveryNodeAndARollbackNowhere() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        running.addAll(cluster.startInProcess());
        Broker leader = ClusterFixture.awaitLeader(running);
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            for (String q : List.of("a", "b", "c")) {
                c.declareQueue(q, QueueSettings.EMPTY);
            }
            ClusterFixture.publish(c.createProducer("a", ProducerOptions.DEFAULT), 0, 2);
            Consumer consumer = c.subscribe("a", new ConsumerOptions(2, 128, Duration.ofMillis(1)));
            Message first = receive(consumer);
            Message second = receive(consumer);

            Transaction commit = c.transaction();
            commit.ack(first);
            commit.publish("b", Payloads.of(100), java.util.Map.of("invoice-for", "0"));
            commit.publish("c", Payloads.of(200));
            commit.publish("c", Payloads.of(201));
            commit.commit();
            cluster.awaitDigest("a", 1, PATIENCE); // the second, still out with the consumer
            cluster.awaitDigest("b", 1, PATIENCE);
            cluster.awaitDigest("c", 2, PATIENCE);
            assertEquals(1, leader.transactions().counts().commits(), "the leader counts the commit (sluice_transactions_committed_total)");
            assertEquals(0, leader.transactions().logRecords(), "a cluster writes no commit record: the log entry is the commit");

            Transaction rollback = c.transaction();
            rollback.ack(second);
            rollback.publish("b", Payloads.of(300));
            rollback.rollback();
            Message again = receive(consumer);
            assertEquals(Payloads.sequence(second.payload()), Payloads.sequence(again.payload()), "the held message comes back");
            assertEquals(second.deliveryCount() + 1, again.deliveryCount(), "delivered again, counted once more");
            again.ack();
            cluster.awaitDigest("a", 0, PATIENCE);
            cluster.awaitDigest("b", 1, PATIENCE);

            Message invoice = receive(c.subscribe("b", new ConsumerOptions(1, 128, Duration.ofMillis(1))));
            assertEquals(100, Payloads.sequence(invoice.payload()));
            assertEquals(java.util.Optional.of("0"), invoice.header("invoice-for"), "the headers travel in the entry");
            invoice.ack();
        }
        assertEquals(Set.of(200L, 201L), cluster.consumeAll("c", 2));
        cluster.awaitDigest("b", 0, PATIENCE);
        cluster.awaitDigest("c", 0, PATIENCE);
    }

    /**
     * A transaction acknowledged a delivery of "orders"; then "orders" was deleted and declared again, and a message
     * published to the new queue took the old delivery's id and was confirmed. The commit skips what it did in the queue
     * that is gone, as a single broker does (X6): the new queue's confirmed message stays on every node. Before, the
     * parts named their queue by name only, and the commit acknowledged the new queue's confirmed message on every node.
     */
    @Test
    void aCommitSkipsWhatItDidInAQueueDeletedAndDeclaredAgain() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        running.addAll(cluster.startInProcess());
        int leader = running.indexOf(ClusterFixture.awaitLeader(running));
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            c.declareQueue("orders", QueueSettings.EMPTY);
            c.declareQueue("invoices", QueueSettings.EMPTY);
            ClusterFixture.publish(c.createProducer("orders", ProducerOptions.DEFAULT), 0, 1);
            Consumer consumer = c.subscribe("orders", new ConsumerOptions(1, 128, Duration.ofMillis(1)));
            Message old = receive(consumer);

            Transaction transaction = c.transaction();
            transaction.ack(old);
            transaction.publish("invoices", Payloads.of(100));
            awaitUnacked(cluster, leader, "orders", 0); // the TX_ACK holds the delivery: it is the transaction's
            c.deleteQueue("orders");
            c.declareQueue("orders", QueueSettings.EMPTY);
            ClusterFixture.publish(c.createProducer("orders", ProducerOptions.DEFAULT), 7, 1); // takes the old delivery's id
            cluster.awaitDigest("orders", 1, PATIENCE);
            transaction.commit();
            cluster.awaitDigest("invoices", 1, PATIENCE);
            assertEquals(1, cluster.awaitDigest("orders", 1, PATIENCE).get("messages").asLong(),
                    "the new queue's confirmed message is on every node");
        }
        assertEquals(Set.of(7L), cluster.consumeAll("orders", 1));
        assertEquals(Set.of(100L), cluster.consumeAll("invoices", 1));
    }

    /**
     * Nothing of an open transaction is stored when it ends without a commit: its connection closed, the leadership
     * moved (the leader closes its clients), or it timed out. Each time the delivery it acknowledged comes again, counted once more, and
     * every node holds nothing of what it published.
     */
    @Test
    void aTransactionEndedWithoutACommitIsNowhere() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        List<Broker> brokers = start(cluster);
        int leaderIndex = brokers.indexOf(ClusterFixture.awaitLeader(brokers));
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            c.declareQueue("a", QueueSettings.EMPTY);
            c.declareQueue("b", QueueSettings.EMPTY);
            ClusterFixture.publish(c.createProducer("a", ProducerOptions.DEFAULT), 0, 1);
        }
        int count;
        try (Connection closing = Connection.connect(cluster.reconnectingOptions())) {
            Message m = receive(closing.subscribe("a", new ConsumerOptions(1, 128, Duration.ofMillis(1))));
            count = m.deliveryCount();
            Transaction tx = closing.transaction();
            for (int i = 0; i < 300; i++) { // the client writes a TX_PUBLISH of the first 256 before the commit
                tx.publish("b", Payloads.of(100 + i));
            }
            tx.ack(m); // written after that TX_PUBLISH: once the leader holds it, the TX_PUBLISH was taken too
            awaitHeld(cluster, leaderIndex);
            assertEquals(0, cluster.awaitDigest("b", 0, PATIENCE).get("messages").asLong(),
                    "nothing is stored before the commit (a single broker stores it pending)");
        }
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            Consumer consumer = c.subscribe("a", new ConsumerOptions(1, 128, Duration.ofMillis(1)));
            Message again = receive(consumer);
            assertEquals(count + 1, again.deliveryCount(), "given back when its transaction's connection closed");
            Transaction tx = c.transaction();
            tx.ack(again);
            tx.publish("b", Payloads.of(101));
            awaitHeld(cluster, leaderIndex);
            int target = (leaderIndex + 1) % 3;
            cluster.moveLeader(leaderIndex, target);
            assertThrows(ConnectionLostException.class, tx::commit, "the leader closed the connection of the open transaction");
            Message third = receive(consumer); // the client follows the new leader and subscribes there again
            assertEquals(count + 2, third.deliveryCount(), "given back when the leadership moved");
            TestAwait.until("the deposed leader ending the transaction", PATIENCE,
                    () -> brokers.get(leaderIndex).transactions().open() == 0);
            cluster.awaitDigest("a", 1, PATIENCE);
            cluster.awaitDigest("b", 0, PATIENCE);

            Transaction timingOut = c.transaction(Duration.ofMillis(500)); // the broker rolls it back after 500 ms
            timingOut.ack(third);
            timingOut.publish("b", Payloads.of(102));
            Message fourth = receive(consumer);
            assertEquals(count + 3, fourth.deliveryCount(), "given back when its transaction timed out");
            assertThrows(io.sluice.client.SluiceException.class, timingOut::commit, "TX_ABORTED: timed out");
            fourth.ack();
        }
        cluster.awaitDigest("a", 0, PATIENCE);
        cluster.awaitDigest("b", 0, PATIENCE);
    }

    /**
     * Rules R9 and R13: an open transaction's messages, kept in the leader's memory until the commit, count toward their
     * queue's quota from TX_PUBLISH, as a single broker's staged messages do (T2), and stop counting when it ends: rolled
     * back, they are gone; committed, they count once, as stored messages. A queue with a hard quota of 300 and the policy
     * reject, a transaction of 260 (the client writes a TX_PUBLISH of the first 256 at once, the rest with the commit):
     * with it open, 44 of 50 plain publishes are admitted (on main all 50 were, and its commit took the queue to 310).
     */
    @Test
    void anOpenTransactionsMessagesCountTowardTheQuotaUntilItEnds() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        List<Broker> brokers = start(cluster);
        int leaderIndex = brokers.indexOf(ClusterFixture.awaitLeader(brokers));
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            c.declareQueue("a", QueueSettings.EMPTY);
            c.declareQueue("q", QueueSettings.builder().set(QueueSettings.QUOTA_HARD_MESSAGES, 300)
                    .set(QueueSettings.OVERFLOW_POLICY, QueueSettings.OVERFLOW_REJECT).build());
            ClusterFixture.publish(c.createProducer("a", ProducerOptions.DEFAULT), 0, 2);
            Consumer consumer = c.subscribe("a", new ConsumerOptions(2, 128, Duration.ofMillis(1)));
            Producer plain = c.createProducer("q", new ProducerOptions(1, 256, 1 << 20, null));

            Transaction open = c.transaction();
            for (int i = 0; i < 260; i++) {
                open.publish("q", Payloads.of(1000 + i));
            }
            open.ack(receive(consumer)); // written after the TX_PUBLISH: once the leader holds it, the TX_PUBLISH was admitted
            awaitUnacked(cluster, leaderIndex, 1);
            assertEquals(6, FlowControlTest.sendCountingRejections(plain, 50, Payloads::of),
                    "256 in the open transaction and 44 plain messages reach the hard quota of 300");

            open.rollback();
            assertEquals(0, FlowControlTest.sendCountingRejections(plain, 256, i -> Payloads.of(100 + i)),
                    "rolled back, its messages count no more: 44 stored and 256 more reach 300");
            cluster.awaitDigest("q", 300, PATIENCE);
            assertEquals(300, cluster.consumeAll("q", 300).size());
            cluster.awaitDigest("q", 0, PATIENCE);

            Transaction committed = c.transaction();
            for (int i = 0; i < 260; i++) {
                committed.publish("q", Payloads.of(2000 + i));
            }
            committed.ack(receive(consumer));
            committed.commit();
            cluster.awaitDigest("q", 260, PATIENCE);
            assertEquals(10, FlowControlTest.sendCountingRejections(plain, 50, i -> Payloads.of(400 + i)),
                    "committed, its 260 count once, as stored: 40 more reach 300");
        }
        cluster.awaitDigest("q", 300, PATIENCE);
    }

    /**
     * A TX_PUBLISH that puts its transaction over {@code transactions.max-bytes} is refused before the leader's queue
     * admits it (docs/transactions.md, rule "caps before the queue"): nothing is counted, and drop-oldest drops nothing
     * for it. Before (found by a review), its window came back and the queue admitted it as uncommitted first, dropping
     * the oldest stored message on every node to make room for a frame the coordinator then refused: "q" kept one of its
     * two messages.
     */
    @Test
    void aTxPublishOverTheTransactionsBytesIsRefusedBeforeDropOldestMakesRoomForIt() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        cluster.overrides = Map.of("transactions.max-bytes", "100");
        start(cluster);
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            c.declareQueue("q", QueueSettings.builder().quotaMessages(0, 2).overflowPolicy("drop-oldest").build());
            ClusterFixture.publish(c.createProducer("q", ProducerOptions.DEFAULT), 0, 2); // at the hard level: one more drops
            Transaction over = c.transaction();
            over.publish("q", new byte[200]);
            SluiceException refused = assertThrows(SluiceException.class, over::commit);
            assertTrue(refused.getMessage().contains("transactions.max-bytes 100"), refused.getMessage());
        }
        cluster.awaitDigest("q", 2, PATIENCE);
        assertEquals(Set.of(0L, 1L), cluster.consumeAll("q", 2), "a stored message was dropped for a refused TX_PUBLISH");
    }

    /** Waits until the leader's queue "a" has {@code unacked} messages out with a consumer: a TX_ACK took the others off. */
    private static void awaitUnacked(ClusterFixture cluster, int leader, long unacked) throws InterruptedException {
        awaitUnacked(cluster, leader, "a", unacked);
    }

    /** Waits until the leader's {@code queue} has {@code unacked} messages out with a consumer. */
    private static void awaitUnacked(ClusterFixture cluster, int leader, String queue, long unacked) throws InterruptedException {
        TestAwait.until("the leader holding the acknowledged delivery", PATIENCE, () -> {
            JsonNode q = cluster.get(leader, "/api/queues/" + queue);
            return q != null && q.get("unackedMessages").asLong() == unacked;
        });
    }

    /** Waits until the leader's queue "a" has no message out with a consumer: a TX_ACK took it off its consumer. */
    private static void awaitHeld(ClusterFixture cluster, int leader) throws InterruptedException {
        awaitUnacked(cluster, leader, 0);
    }

    /**
     * The leader cut off from both followers cannot commit the transaction's entry: the commit is never answered OK (nor
     * "rolled back": its entry may still commit), its connection is closed, and the old leader's stores keep none of it.
     * The followers elect a leader of their own and the old leader comes back as a follower: every node holds the message
     * the transaction acknowledged and nothing it published, and the message is delivered again.
     */
    @Test
    void aCommitTheLeaderCouldNotCommitIsNowhere() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        List<Broker> brokers = start(cluster);
        Broker leader = ClusterFixture.awaitLeader(brokers);
        int leaderIndex = brokers.indexOf(leader);
        JsonNode before = commitOnCutOffLeader(cluster, brokers, leaderIndex);
        leader.close();
        running.remove(leader);

        cluster.restartFollowersThenOldLeader(leaderIndex, running);
        assertEquals(before, cluster.awaitDigest("a", 1, PATIENCE), "every node keeps the acknowledged message");
        cluster.awaitDigest("b", 0, PATIENCE);
        assertEquals(Set.of(0L), cluster.consumeAll("a", 1), "delivered again");
        cluster.awaitDigest("a", 0, PATIENCE);
    }

    /**
     * As above, but the old leader stays up and one follower comes back whose log ends before the transaction's entry:
     * only the old leader can win, and it commits the entry. Every node, the old leader included (which gave the held
     * message back when it lost its leadership), then holds the whole transaction: its publish, and not the message it
     * acknowledged. Its client was never told it was rolled back.
     */
    @Test
    void aCommitWhoseEntryCommitsAfterAllIsWholeOnEveryNode() throws Exception {
        ClusterFixture cluster = ClusterFixture.slowToStepDown(dir);
        List<Broker> brokers = start(cluster);
        Broker leader = ClusterFixture.awaitLeader(brokers);
        int leaderIndex = brokers.indexOf(leader);
        commitOnCutOffLeader(cluster, brokers, leaderIndex);

        cluster.rejoinBehindOldLeader(leader, leaderIndex, running);
        cluster.awaitDigest("a", 0, PATIENCE);
        cluster.awaitDigest("b", 1, PATIENCE);
        assertEquals(Set.of(100L), cluster.consumeAll("b", 1));
        cluster.awaitDigest("b", 0, PATIENCE);
    }

    /**
     * Declares "a" and "b", publishes one message to "a", has a consumer on the leader receive it, and commits a
     * transaction that acknowledges it and publishes to "b" once both followers are closed. The commit must fail with the
     * connection lost (its outcome unknown), and the leader's stores must be as before. Returns the digest of "a" then.
     */
    private JsonNode commitOnCutOffLeader(ClusterFixture cluster, List<Broker> brokers, int leaderIndex) throws Exception {
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            c.declareQueue("a", QueueSettings.EMPTY);
            c.declareQueue("b", QueueSettings.EMPTY);
            Producer producer = c.createProducer("a", ProducerOptions.DEFAULT);
            ClusterFixture.publish(producer, 0, 1);
        }
        ClusterFixture.awaitApplied(brokers, brokers.get(leaderIndex));
        JsonNode before = cluster.awaitDigest("a", 1, PATIENCE);
        JsonNode emptyB = cluster.awaitDigest("b", 0, PATIENCE);
        List<String> leaderOnly = List.of("127.0.0.1:" + cluster.clientPorts[leaderIndex]);
        try (Connection c = Connection.connect(ConnectionOptions.builder().bootstrap(leaderOnly)
                .requestTimeout(Duration.ofSeconds(60)).build())) {
            Consumer consumer = c.subscribe("a", new ConsumerOptions(1, 128, Duration.ofMillis(1)));
            Message m = receive(consumer);
            ClusterFixture.awaitDeliveriesReplicated(brokers, brokers.get(leaderIndex), "a", List.of(m.id())); // R10's entry on every node
            Transaction tx = c.transaction();
            tx.ack(m);
            tx.publish("b", Payloads.of(100));
            cluster.closeAllBut(brokers, leaderIndex, running);
            assertThrows(ConnectionLostException.class, () -> tx.commit(Duration.ofSeconds(60)),
                    "a commit whose entry may still commit is neither OK nor rolled back: its outcome is unknown");
        }
        // Raft refused the entry on the old leader (it stepped down), which ended the transaction there.
        TestAwait.until("the cut-off leader ending the transaction", PATIENCE,
                () -> brokers.get(leaderIndex).transactions().open() == 0);
        assertEquals(before, cluster.get(leaderIndex, "/api/queues/a/digest"), "the cut-off leader acknowledged nothing");
        assertEquals(emptyB, cluster.get(leaderIndex, "/api/queues/b/digest"), "the cut-off leader stored nothing");
        return before;
    }

    /** Starts the cluster's nodes in this JVM, stopped after the test; returns them in node order. */
    private List<Broker> start(ClusterFixture cluster) throws Exception {
        List<Broker> brokers = cluster.startInProcess();
        running.addAll(brokers);
        return brokers;
    }

    private static Message receive(Consumer consumer) throws InterruptedException {
        Message m = consumer.receive(PATIENCE);
        assertNotNull(m, "no delivery within " + PATIENCE);
        return m;
    }
}
