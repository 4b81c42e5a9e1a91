package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionLostException;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.SluiceTimeoutException;
import io.sluice.client.Transaction;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R13 of docs/replication.md under kill -9: three broker JVMs; a worker takes each order from "orders" and, in one
 * transaction, acknowledges it and publishes its invoice to "invoices", while another thread kills the leader with
 * kill -9 (and starts it again as a follower) {@code -Dsluice.cluster-tx-crash.kills} times (default 2). A commit whose
 * answer never came (its outcome unknown) is not retried: if its entry committed, the order is gone; if not, the order
 * is delivered again and invoiced then. So at the end every node holds no order and the same invoices, and every order
 * has exactly one invoice: none lost, none twice. A transaction applied in part on some node, or a replay that stored
 * an invoice again, or an order acknowledged without its invoice, breaks that.
 */
@Tag("cluster-loop")
class ClusterTransactionCrashTest {
    private static final int ORDERS = 1_500;
    private static final Duration PATIENCE = Duration.ofSeconds(120);

    @TempDir
    Path dir;
    private final Process[] nodes = new Process[3];

    @AfterEach
    void killAll() throws InterruptedException {
        ChildJvm.killAll(nodes);
    }

    @Test
    @Timeout(900)
    void everyOrderGetsExactlyOneInvoiceAcrossLeaderKills() throws Exception {
        int kills = Integer.getInteger("sluice.cluster-tx-crash.kills", 2);
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        cluster.startChildren(nodes);
        try (Connection c = Connection.connect(cluster.reconnectingOptions())) {
            c.declareQueue("orders", QueueSettings.EMPTY);
            c.declareQueue("invoices", QueueSettings.EMPTY);
            Producer producer = c.createProducer("orders", ProducerOptions.DEFAULT);
            ClusterFixture.publish(producer, 0, ORDERS);
        }
        cluster.awaitDigest("orders", ORDERS, PATIENCE);

        AtomicLong committed = new AtomicLong();
        AtomicLong unknown = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        List<Throwable> workerDied = new CopyOnWriteArrayList<>();
        Connection worker = Connection.connect(cluster.reconnectingOptions());
        Thread working = new Thread(() -> {
            try {
                Consumer consumer = worker.subscribe("orders", new ConsumerOptions(16, 128, Duration.ofMillis(1)));
                while (!stop.get()) {
                    Message order = consumer.receive(Duration.ofSeconds(1));
                    if (order == null) {
                        continue;
                    }
                    try {
                        Transaction tx = worker.transaction();
                        tx.ack(order);
                        tx.publish("invoices", Payloads.of(Payloads.sequence(order.payload())));
                        tx.commit(Duration.ofSeconds(30));
                        committed.incrementAndGet();
                    } catch (ConnectionLostException | SluiceTimeoutException e) {
                        unknown.incrementAndGet(); // not retried: the order comes again if the commit did not happen
                    } catch (RuntimeException e) {
                        failed.incrementAndGet(); // rolled back (an ack of a delivery of a connection since lost, ...)
                    }
                }
            } catch (Throwable t) {
                workerDied.add(t);
            }
        }, "cluster-tx-crash-worker");
        working.start();

        for (int kill = 0; kill < kills; kill++) {
            long killAt = (long) ORDERS * (kill + 1) / (kills + 2);
            TestAwait.until(killAt + " commits", PATIENCE, () -> committed.get() >= killAt || !workerDied.isEmpty());
            assertEquals(List.of(), workerDied);
            int leader = cluster.awaitServing(0, 1, 2);
            ChildJvm.kill(nodes[leader]);
            long after = committed.get();
            System.out.printf("ClusterTransactionCrashTest: killed the leader, node %d, after %d commits%n", leader + 1, after);
            TestAwait.until("a commit after the kill", PATIENCE, () -> committed.get() > after || !workerDied.isEmpty());
            cluster.startChild(leader, nodes);
        }
        for (int i = 0; i < 3; i++) {
            int node = i;
            TestAwait.value("node " + (node + 1) + " holding no order", Duration.ofSeconds(300),
                    () -> cluster.backlog(node, "orders"), left -> left == 0);
        }
        stop.set(true);
        working.join(60_000);
        worker.close();
        assertEquals(List.of(), workerDied);

        cluster.awaitDigest("orders", 0, PATIENCE);
        cluster.awaitSameDigest("invoices", PATIENCE);
        ConsumedHistory invoices = ConsumedHistory.consumeEverything(cluster.reconnectingOptions(), "invoices");
        Map<Long, Set<Long>> byOrder = invoices.idsByPayload();
        Set<Long> orders = new HashSet<>();
        for (long i = 0; i < ORDERS; i++) {
            orders.add(i);
        }
        System.out.printf("ClusterTransactionCrashTest: %d kills; %d commits answered OK, %d with the outcome unknown, %d rolled "
                + "back; %d invoices, %d of them twice%n", kills, committed.get(), unknown.get(), failed.get(), byOrder.size(),
                invoices.storedTwice());
        Set<Long> missing = new HashSet<>(orders);
        missing.removeAll(byOrder.keySet());
        assertEquals(Set.of(), missing, "orders acknowledged without their invoice");
        assertEquals(0, invoices.storedTwice(), "orders invoiced twice");
        assertEquals(orders, byOrder.keySet());
        assertTrue(invoices.faults().stream().noneMatch(f -> f.contains("after its ack")), invoices.faults().toString());
        cluster.awaitDigest("invoices", 0, PATIENCE);
    }
}
