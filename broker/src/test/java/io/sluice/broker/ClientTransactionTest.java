package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionLostException;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.client.SluiceException;
import io.sluice.client.Transaction;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Java client's transactions ({@link Connection#transaction()}) against a real in-JVM broker: a worker
 * consumes "orders" and, in one transaction per step, acknowledges them and publishes an invoice for each
 * to "invoices". After each test both queues are drained and compared with exactly what the commits, and
 * only they, should have left there.
 */
@Timeout(60)
class ClientTransactionTest {
    private static final Duration WAIT = Duration.ofSeconds(10);

    @TempDir
    Path dir;
    private Broker broker;
    /** The connection that consumes "orders" and runs the transactions. */
    private Connection worker;
    /** Every connection a test opened, closed before the broker. */
    private final List<Connection> connections = new ArrayList<>();

    @AfterEach
    void closeConnectionsThenTheBroker() {
        connections.forEach(Connection::close);
        if (broker != null) {
            broker.close();
        }
    }

    /** Starts the broker with {@code settings}, has the worker publish {@code orders} orders and subscribe to them. */
    private Consumer startWorker(Map<String, String> settings, int orders, ConsumerOptions options) {
        return startWorker(settings, QueueSettings.EMPTY, orders, options);
    }

    /** The same, with "orders" declared with {@code ordersSettings}. */
    private Consumer startWorker(Map<String, String> settings, QueueSettings ordersSettings, int orders, ConsumerOptions options) {
        broker = TestBrokers.start(dir, settings);
        worker = connect();
        publishOrders(worker, ordersSettings, orders);
        return worker.subscribe("orders", options);
    }

    /** A connection that reconnects quickly, so that a test of a lost connection needs no long wait. */
    private Connection connect() {
        Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .requestTimeout(WAIT)
                .reconnectPolicy(new ReconnectPolicy(true, Duration.ofMillis(20), Duration.ofMillis(200), 2.0, 0.2))
                .build());
        connections.add(c);
        return c;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String text(Message m) {
        return new String(m.payload(), StandardCharsets.UTF_8);
    }

    private static String invoiceFor(Message order) {
        return "invoice-" + text(order);
    }

    /** Declares "orders" and "invoices" and publishes orders o0..o{count-1}, each confirmed. */
    private static void publishOrders(Connection c, QueueSettings ordersSettings, int count) {
        c.declareQueue("orders", ordersSettings);
        c.declareQueue("invoices", QueueSettings.EMPTY);
        Producer producer = c.createProducer("orders", ProducerOptions.DEFAULT);
        List<CompletableFuture<Void>> confirms = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            confirms.add(producer.sendAsync(bytes("o" + i)));
        }
        CompletableFuture.allOf(confirms.toArray(CompletableFuture[]::new)).join();
    }

    private static Message receive(Consumer consumer) throws InterruptedException {
        Message m = consumer.receive(WAIT);
        assertNotNull(m, "a message of " + consumer.queue() + " within " + WAIT);
        return m;
    }

    private static List<String> orders(int from, int to) {
        List<String> names = new ArrayList<>();
        for (int i = from; i < to; i++) {
            names.add("o" + i);
        }
        return names;
    }

    private static List<String> invoices(List<String> orders) {
        return orders.stream().map(o -> "invoice-" + o).sorted().toList();
    }

    /**
     * Every message stored in {@code queue}, sorted, read and acknowledged on a connection of its own: as many
     * as the queue holds for clients, so the list is the queue's exact contents. Then the queue is empty, its
     * store too: a commit record kept in the queue (rule T5 of docs/transactions.md), which the store counts
     * and no client sees, is finished once what its transaction published here was consumed.
     */
    private List<String> drain(String queue) throws Exception {
        long stored = broker.queues().get(queue).messageCount();
        List<String> payloads = new ArrayList<>();
        try (Connection reader = connect(); Consumer consumer = reader.subscribe(queue, ConsumerOptions.DEFAULT)) {
            for (long i = 0; i < stored; i++) {
                Message m = receive(consumer);
                payloads.add(text(m));
                m.ack();
            }
        }
        TestAwait.until(queue + " drained", () -> broker.store().queue(queue).unackedMessages() == 0);
        return payloads.stream().sorted().toList();
    }

    /**
     * Held: the broker took the transaction's acknowledged deliveries off the consumer (the TX_ACK arrived),
     * leaving {@code outWithConsumer} of the {@code stored} messages out with it.
     */
    private void awaitHeld(String queue, long stored, int outWithConsumer) throws Exception {
        TestAwait.value(queue + " holding its deliveries for the transaction", WAIT,
                () -> broker.queues().get(queue).snapshot().get(10, TimeUnit.SECONDS),
                s -> s.inFlightMessages() == outWithConsumer && s.backlogMessages() == stored);
    }

    /** Repeats {@code call} until it throws, as it does once the client's network thread saw the failure. */
    private static SluiceException awaitFailure(Runnable call) throws Exception {
        return TestAwait.value("the transaction failed", WAIT, () -> failureOf(call), Objects::nonNull);
    }

    private static SluiceException failureOf(Runnable call) {
        try {
            call.run();
            return null;
        } catch (SluiceException e) {
            return e;
        }
    }

    @Test
    void shouldAcknowledgeEachOrderAndPublishItsInvoiceInOneCommit() throws Exception {
        Consumer consumer = startWorker(Map.of(), 10, ConsumerOptions.DEFAULT);
        for (int step = 0; step < 5; step++) {
            try (Transaction transaction = worker.transaction()) {
                for (int i = 0; i < 2; i++) {
                    Message order = receive(consumer);
                    assertEquals(1, order.deliveryCount(), "nothing was redelivered: " + text(order));
                    transaction.ack(order);
                    transaction.publish("invoices", bytes(invoiceFor(order)));
                }
                transaction.commit();
            }
        }
        consumer.close();
        assertEquals(5, broker.transactions().counts().commits());
        assertEquals(0, broker.transactions().counts().rollbacks() + broker.transactions().counts().aborts());
        assertEquals(List.of(), drain("orders"), "every order was acknowledged by its commit");
        assertEquals(invoices(orders(0, 10)), drain("invoices"), "one invoice per order, none twice");
        assertEquals(0L, TestAwait.value("the transaction log finished", WAIT, () -> broker.transactions().logRecords(), n -> n == 0));
    }

    @Test
    void shouldRedeliverWhatARollbackOrAnUncommittedCloseAcknowledgedAndPublishNothing() throws Exception {
        Consumer consumer = startWorker(Map.of(), 2, ConsumerOptions.DEFAULT);
        Message first = receive(consumer);
        Message second = receive(consumer);

        Transaction rolledBack = worker.transaction();
        rolledBack.ack(first);
        rolledBack.publish("invoices", bytes(invoiceFor(first)));
        awaitHeld("orders", 2, 1);
        rolledBack.rollback();
        Message again = receive(consumer);
        assertEquals(List.of(text(first), 2), List.of(text(again), again.deliveryCount()), "o0 back, delivered a second time");

        try (Transaction closed = worker.transaction()) {
            closed.ack(second);
            closed.publish("invoices", bytes(invoiceFor(second)));
            awaitHeld("orders", 2, 1);
            // closed without a commit: rolled back
        }
        Message secondAgain = receive(consumer);
        assertEquals(List.of(text(second), 2), List.of(text(secondAgain), secondAgain.deliveryCount()), "o1 back, delivered a second time");
        assertEquals(0, broker.store().queue("invoices").unackedMessages(), "neither transaction published anything");
        assertEquals(2, broker.transactions().counts().rollbacks());

        try (Transaction done = worker.transaction()) {
            for (Message order : List.of(again, secondAgain)) {
                done.ack(order);
                done.publish("invoices", bytes(invoiceFor(order)));
            }
            done.commit();
        }
        consumer.close();
        assertEquals(List.of(), drain("orders"));
        assertEquals(invoices(orders(0, 2)), drain("invoices"), "only the committed transaction's invoices");
    }

    @Test
    void shouldSendAMessageRolledBackPastMaxDeliveriesToItsDeadLetterQueue() throws Exception {
        Consumer consumer = startWorker(Map.of(), QueueSettings.builder().set(QueueSettings.MAX_DELIVERIES, 2).build(), 1,
                ConsumerOptions.DEFAULT);
        for (int delivery = 1; delivery <= 2; delivery++) {
            Message order = receive(consumer);
            assertEquals(delivery, order.deliveryCount());
            Transaction transaction = worker.transaction();
            transaction.ack(order);
            transaction.publish("invoices", bytes(invoiceFor(order)));
            awaitHeld("orders", 1, 0);
            transaction.rollback();
        }
        // The original is acknowledged once its copy in the dead-letter queue is durable.
        TestAwait.until("o0 dead-lettered", () -> broker.queues().get("orders.dlq") != null
                && broker.store().queue("orders.dlq").unackedMessages() == 1 && broker.store().queue("orders").unackedMessages() == 0);
        consumer.close();
        assertEquals(List.of(), drain("orders"), "past maxDeliveries 2 the order is no longer delivered");
        assertEquals(List.of("o0"), drain("orders.dlq"));
        assertEquals(List.of(), drain("invoices"));
    }

    @Test
    void shouldFailTheCommitOfATransactionTheBrokerTimedOutWithItsCode() throws Exception {
        Consumer consumer = startWorker(Map.of(), 1, ConsumerOptions.DEFAULT);
        Message order = receive(consumer);
        Transaction transaction = worker.transaction(Duration.ofMillis(300));
        transaction.ack(order);
        transaction.publish("invoices", bytes(invoiceFor(order)));
        awaitHeld("orders", 1, 0);
        TestAwait.until("the broker's timeout", () -> broker.transactions().counts().timeouts() == 1);
        SluiceException timedOut = assertThrows(SluiceException.class, transaction::commit);
        assertEquals(ErrorCode.TRANSACTION_TIMED_OUT, timedOut.errorCode(), timedOut.getMessage());
        transaction.close();
        Message again = receive(consumer);
        assertEquals(List.of("o0", 2), List.of(text(again), again.deliveryCount()), "the held order came back");
        again.ack();
        consumer.close();
        assertEquals(List.of(), drain("invoices"), "nothing of the timed-out transaction was published");
        assertEquals(0, broker.transactions().counts().commits());
    }

    @Test
    void shouldNotLeaveTransactionsTheBrokerAbortedCountingAgainstTheConnectionsOpenOnes() throws Exception {
        Consumer consumer = startWorker(Map.of("transactions.max-open-per-connection", "2"), 1, ConsumerOptions.DEFAULT);
        Message order = receive(consumer);
        // As many timeouts as the connection may have transactions open, each learnt by the client before it
        // ends the transaction: the broker keeps an aborted one until its client commits or rolls it back.
        for (int i = 1; i <= 2; i++) {
            Transaction transaction = worker.transaction(Duration.ofMillis(50));
            transaction.ack(order); // the TX_ACK, with the TX_BEGIN before it, goes out within a millisecond
            SluiceException timedOut = awaitFailure(() -> transaction.publish("invoices", bytes("never")));
            assertEquals(ErrorCode.TRANSACTION_TIMED_OUT, timedOut.errorCode(), timedOut.getMessage());
            transaction.close();
            order = receive(consumer);
            assertEquals(i + 1, order.deliveryCount(), "the timed-out transaction's order came back");
        }
        try (Transaction transaction = worker.transaction()) {
            transaction.ack(order);
            transaction.publish("invoices", bytes(invoiceFor(order)));
            transaction.commit();
        }
        consumer.close();
        assertEquals(2, broker.transactions().counts().timeouts());
        assertEquals(List.of(), drain("orders"));
        assertEquals(List.of("invoice-o0"), drain("invoices"));
    }

    @Test
    void shouldCommitATransactionThatPublishesMoreThanThePublishWindow() throws Exception {
        int window = 16;
        Consumer consumer = startWorker(Map.of("broker.publish-window-messages", Integer.toString(window)), 1, ConsumerOptions.DEFAULT);
        Message order = receive(consumer);
        List<String> published = new ArrayList<>();
        try (Transaction transaction = worker.transaction()) {
            transaction.ack(order);
            for (int i = 0; i < 10 * window; i++) {
                String line = "line-" + i;
                transaction.publish("invoices", bytes(line));
                published.add(line);
            }
            transaction.commit();
        }
        // Ten windows' worth went through one window: the commit could be sent only because each TX_PUBLISH's
        // window came back once staged. Plain publishing of a whole window still works after it.
        Producer producer = worker.createProducer("invoices", ProducerOptions.DEFAULT);
        List<CompletableFuture<Void>> confirms = new ArrayList<>();
        for (int i = 0; i < window; i++) {
            confirms.add(producer.sendAsync(bytes("plain-" + i)));
            published.add("plain-" + i);
        }
        CompletableFuture.allOf(confirms.toArray(CompletableFuture[]::new)).get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        consumer.close();
        assertEquals(List.of(), drain("orders"));
        assertEquals(published.stream().sorted().toList(), drain("invoices"));
    }

    @Test
    void shouldKeepTheConsumersCreditFlowingWhenItsAcksGoThroughTransactions() throws Exception {
        int total = 60;
        int credit = 4;
        Consumer consumer = startWorker(Map.of(), total, ConsumerOptions.DEFAULT.withCredit(credit));
        int processed = 0;
        while (processed < total) {
            try (Transaction transaction = worker.transaction()) {
                // Three per transaction against a credit of four: the fifth delivery and every one after it
                // come only because the TX_ACKs before them settled credit.
                for (int i = 0; i < 3 && processed < total; i++, processed++) {
                    Message order = receive(consumer);
                    transaction.ack(order);
                    transaction.publish("invoices", bytes(invoiceFor(order)));
                }
                transaction.commit();
            }
            int outstanding = broker.queues().get("orders").snapshot().syncUninterruptibly().getNow().inFlightMessages();
            assertTrue(outstanding <= credit, outstanding + " deliveries outstanding, over the credit of " + credit);
        }
        consumer.close();
        assertEquals(List.of(), drain("orders"));
        assertEquals(invoices(orders(0, total)), drain("invoices"));
    }

    @Test
    void shouldFailATransactionWhoseConnectionIsLostAndNeverReplayIt() throws Exception {
        Consumer consumer = startWorker(Map.of(), 1, ConsumerOptions.DEFAULT);
        Message order = receive(consumer);
        Transaction transaction = worker.transaction();
        transaction.ack(order);
        transaction.publish("invoices", bytes(invoiceFor(order)));
        awaitHeld("orders", 1, 0);
        assertEquals(1, broker.connections().size());
        broker.connections().close().syncUninterruptibly();

        ConnectionLostException lost = assertInstanceOf(ConnectionLostException.class,
                awaitFailure(() -> transaction.publish("invoices", bytes("after"))));
        assertSame(lost, assertThrows(ConnectionLostException.class, transaction::commit));
        transaction.close();
        Message again = receive(consumer); // resubscribed after the reconnect
        assertEquals(List.of("o0", 2), List.of(text(again), again.deliveryCount()),
                "the closed connection's transaction was rolled back: its order came back");
        assertTrue(worker.isConnected());
        assertEquals(0, broker.transactions().open(), "nothing of the transaction was sent again");
        assertEquals(0, broker.transactions().counts().commits());
        assertEquals(1, broker.transactions().counts().rollbacks());
        assertEquals(0, broker.store().queue("invoices").unackedMessages());

        try (Transaction retry = worker.transaction()) {
            retry.ack(again);
            retry.publish("invoices", bytes(invoiceFor(again)));
            retry.commit();
        }
        consumer.close();
        assertEquals(List.of(), drain("orders"));
        assertEquals(List.of("invoice-o0"), drain("invoices"), "published once, by the transaction run again");
    }

    @Test
    void shouldNeitherTimeOutNorHandOnADeliveryATransactionHolds() throws Exception {
        Consumer consumer = startWorker(Map.of(), QueueSettings.builder().set(QueueSettings.ACK_TIMEOUT_MS, 1000).build(), 2,
                ConsumerOptions.DEFAULT);
        Message held = receive(consumer);
        assertEquals("o1", text(receive(consumer)), "o1 is left unacknowledged");
        try (Transaction transaction = worker.transaction()) {
            transaction.ack(held);
            transaction.publish("invoices", bytes(invoiceFor(held)));
            awaitHeld("orders", 2, 1);
            // o1, delivered after o0, comes back at its ack timeout; the same pass would have taken o0 back too.
            Message late = receive(consumer);
            assertEquals(List.of("o1", 2), List.of(text(late), late.deliveryCount()));
            assertEquals(1, broker.queues().get("orders").snapshot().get(10, TimeUnit.SECONDS).counters().redelivered(),
                    "only o1 was taken back at the ack timeout");
            late.ack();
            // Its consumer leaves: what it had out returns to the queue, the held o0 does not.
            consumer.close();
            Consumer other = worker.subscribe("orders", ConsumerOptions.DEFAULT);
            transaction.commit();
            other.close();
        }
        assertEquals(3, broker.queues().get("orders").snapshot().get(10, TimeUnit.SECONDS).counters().delivered(),
                "o0 once, o1 twice: o0 was never delivered again");
        assertEquals(List.of(), drain("orders"));
        assertEquals(List.of("invoice-o0"), drain("invoices"));
    }

    @Test
    void shouldHoldWhatATransactionAcknowledgedWhenItsConsumerClosesBeforeTheCommit() throws Exception {
        Consumer consumer = startWorker(Map.of(), 1, ConsumerOptions.DEFAULT);
        Message order = receive(consumer);
        try (Transaction transaction = worker.transaction()) {
            transaction.ack(order);
            consumer.close();
            transaction.publish("invoices", bytes(invoiceFor(order)));
            transaction.commit();
        }
        assertEquals(List.of(), drain("orders"), "the commit acknowledged the order its consumer had left");
        assertEquals(List.of("invoice-o0"), drain("invoices"));
    }
}
