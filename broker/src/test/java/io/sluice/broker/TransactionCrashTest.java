package io.sluice.broker;

import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.DeleteQueueFrame;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.HeartbeatFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.TxAbortedFrame;
import io.sluice.protocol.TxAckFrame;
import io.sluice.protocol.TxBeginFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxPublishFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A broker in a child JVM stopped as kill -9 would, in the middle of transactions, then started again:
 * every transaction is all there or not at all. Each order a worker consumes is acknowledged in the
 * same transaction that publishes its invoice to one queue and its audit line to another, so after
 * the restart an order is either gone with exactly one invoice and one audit line, or back in
 * "orders" with neither. Each test runs that way (two target queues: the commit record goes to the
 * transaction log) and with invoices only (one target queue: the commit record goes into "invoices"
 * itself, rule T5), where an order is either gone with one invoice or back with none.
 *
 * <ul>
 *   <li>{@link #aStopAtEachNamedPointLeavesTheTransactionWhole}: the broker halts itself at a named
 *       point of a commit ({@code sluice.crash-point}), or of the recovery after one.</li>
 *   <li>{@link #killNineWhileTransactionsAreInFlight}: kill -9 from another thread while a worker
 *       commits, many times; at the end every order was processed exactly once.</li>
 * </ul>
 */
class TransactionCrashTest {
    /** Kill cycles per shape: two in the suite's budget; a soak run asks for more with -Dsluice.txn-crash.cycles=N. */
    private static final int CYCLES = Integer.getInteger("sluice.txn-crash.cycles", 2);

    @TempDir
    Path dir;
    private Process broker;
    /** The output of the broker started last. */
    private Path log;
    private final int port = TestPorts.free();
    private int starts;

    @AfterEach
    void killBroker() throws InterruptedException {
        if (broker != null && broker.isAlive()) {
            ChildJvm.kill(broker);
        }
    }

    private void startBroker(String crashPoint, String... settings) throws Exception {
        log = dir.resolve("broker-" + starts++ + ".log");
        List<String> flags = crashPoint == null ? List.of() : List.of("-Dsluice.crash-point=" + crashPoint);
        List<String> args = new ArrayList<>(List.of("--data-dir", dir.resolve("data").toString(), "--port", Integer.toString(port),
                "--set", "storage.reserved-disk-bytes=67108864", "--set", "metrics.port=0"));
        for (String setting : settings) {
            args.addAll(List.of("--set", setting));
        }
        broker = ChildJvm.start(log, flags, Main.class, args.toArray(String[]::new));
        if (crashPoint != null && crashPoint.startsWith("txn-recovery")) {
            return; // it may stop before it listens
        }
        ChildJvm.awaitListening(broker, port, log);
    }

    private static long count(RawClient c, String queue) throws InterruptedException {
        c.send(new DeclareQueueFrame(1, queue, QueueSettings.EMPTY));
        return c.expect(OkFrame.class).messageCount().orElseThrow();
    }

    /** Publishes orders {@code from..to-1} (payload "order-N"), confirmed. */
    private static void publishOrders(RawClient c, int from, int to) throws InterruptedException {
        publish(c, "orders", from, to);
    }

    /** Publishes messages {@code from..to-1} to {@code queue} (payload its name without the last letter, "-N"), confirmed. */
    private static void publish(RawClient c, String queue, int from, int to) throws InterruptedException {
        String prefix = queue.substring(0, queue.length() - 1) + "-";
        for (int start = from; start < to; start += 100) {
            PublishFrameBuilder b = new PublishFrameBuilder(c.alloc(), queue);
            int end = Math.min(to, start + 100);
            for (int i = start; i < end; i++) {
                b.add(0, 0, List.of(), (prefix + i).getBytes(StandardCharsets.UTF_8));
            }
            c.send(b.build());
            int confirmed = 0;
            while (confirmed < end - start) {
                for (IdRange r : nextConfirm(c).sequences()) {
                    confirmed += (int) (r.to() - r.from() + 1);
                }
            }
        }
    }

    /**
     * The next CONFIRM. On a loaded machine a force can take longer than {@link RawClient#expect}'s 10 s, and the
     * broker's heartbeats fill the silence meanwhile (two failures in 40 runs beside other builds, before the
     * test reached its point).
     */
    private static ConfirmFrame nextConfirm(RawClient c) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            Object o = c.received.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (o instanceof ConfirmFrame confirm) {
                return confirm;
            }
            if (!(o instanceof HeartbeatFrame)) {
                throw new AssertionError("expected a ConfirmFrame, got " + o);
            }
        }
    }

    /** One transaction: acknowledges the orders delivered and publishes an invoice (and, {@code audited}, an audit line) for each. */
    private static void sendTransaction(RawClient c, long txn, List<RawClient.Delivery> orders, long requestId, boolean audited) {
        c.send(new TxBeginFrame(txn, 0));
        List<IdRange> ids = new ArrayList<>();
        for (RawClient.Delivery d : orders) {
            ids.add(IdRange.single(d.id()));
        }
        c.send(new TxAckFrame(txn, 7, ids));
        PublishFrameBuilder invoices = new PublishFrameBuilder(c.alloc(), "invoices");
        PublishFrameBuilder audit = new PublishFrameBuilder(c.alloc(), "audit");
        for (RawClient.Delivery d : orders) {
            String order = new String(d.payload(), StandardCharsets.UTF_8);
            invoices.add(0, 0, List.of(), ("invoice-" + order).getBytes(StandardCharsets.UTF_8));
            audit.add(0, 0, List.of(), ("audit-" + order).getBytes(StandardCharsets.UTF_8));
        }
        c.send(new TxPublishFrame(txn, invoices.build()));
        if (audited) {
            c.send(new TxPublishFrame(txn, audit.build()));
        } else {
            audit.discard();
        }
        c.send(new TxCommitFrame(requestId, txn));
    }

    /** Every payload of {@code queue} with how many times it is stored, read without acknowledging. */
    private static Map<String, Integer> contents(RawClient c, String queue, int tag) throws InterruptedException {
        long n = count(c, queue);
        c.send(new SubscribeFrame(2, tag, queue, (int) Math.max(1, n)));
        c.expect(OkFrame.class);
        Map<String, Integer> seen = new TreeMap<>();
        for (RawClient.Delivery d : c.deliveries((int) n)) {
            seen.merge(new String(d.payload(), StandardCharsets.UTF_8), 1, Integer::sum);
        }
        return seen;
    }

    /**
     * After the restart: each of the {@code total} orders is either still in "orders" or has exactly one
     * invoice and one audit line (none if not {@code audited}), never both and never neither, and none is
     * stored twice. Returns the orders processed.
     */
    private static Set<String> assertWhole(RawClient c, int total, boolean audited) throws InterruptedException {
        Map<String, Integer> orders = contents(c, "orders", 11);
        Map<String, Integer> invoices = contents(c, "invoices", 12);
        Map<String, Integer> audit = contents(c, "audit", 13);
        Set<String> processed = ConcurrentHashMap.newKeySet();
        for (int i = 0; i < total; i++) {
            String order = "order-" + i;
            int inOrders = orders.getOrDefault(order, 0);
            int invoiced = invoices.getOrDefault("invoice-" + order, 0);
            int auditLines = audited ? 1 : 0;
            assertTrue((inOrders == 1 && invoiced == 0 && audit.getOrDefault("audit-" + order, 0) == 0)
                            || (inOrders == 0 && invoiced == 1 && audit.getOrDefault("audit-" + order, 0) == auditLines),
                    order + ": " + inOrders + " in orders, " + invoiced + " invoices, " + audit.getOrDefault("audit-" + order, 0)
                            + " audit lines");
            if (inOrders == 0) {
                processed.add(order);
            }
        }
        assertEquals(total - processed.size(), orders.size(), "orders: " + orders.keySet());
        assertEquals(processed.size(), invoices.size());
        assertEquals(audited ? processed.size() : 0, audit.size());
        return processed;
    }

    static Stream<Arguments> pointsAndShapes() {
        return Stream.of("txn-before-commit-record", "txn-after-commit-record", "txn-after-a-queue-applied",
                "txn-before-finish", "txn-recovery-before-finish")
                .flatMap(point -> Stream.of(Arguments.of(point, true), Arguments.of(point, false)));
    }

    @ParameterizedTest(name = "{0}, audited {1}")
    @MethodSource("pointsAndShapes")
    @Timeout(120)
    void aStopAtEachNamedPointLeavesTheTransactionWhole(String point, boolean audited) throws Exception {
        boolean inRecovery = point.startsWith("txn-recovery");
        // A stop in recovery needs a commit to recover: the first run stops after its commit record.
        startBroker(inRecovery ? "txn-after-commit-record" : point);
        try (RawClient c = RawClient.connected(port)) {
            for (String q : List.of("orders", "invoices", "audit")) {
                count(c, q);
            }
            publishOrders(c, 0, 5);
            c.send(new SubscribeFrame(2, 7, "orders", 10));
            c.expect(OkFrame.class);
            sendTransaction(c, 1, c.deliveries(5), 9, audited);
            assertTrue(broker.waitFor(30, TimeUnit.SECONDS), "the broker stopped at " + point);
        }
        if (inRecovery) {
            startBroker(point);
            assertTrue(broker.waitFor(30, TimeUnit.SECONDS), "the broker stopped in its recovery");
        }
        startBroker(null);
        try (RawClient c = RawClient.connected(port)) {
            Set<String> processed = assertWhole(c, 5, audited);
            // Before its commit record the transaction is rolled back; from the record on it is committed.
            assertEquals(point.equals("txn-before-commit-record") ? 0 : 5, processed.size(), point);
        }
    }

    @ParameterizedTest(name = "audited {0}")
    @ValueSource(booleans = {true, false})
    @Tag("slow")
    @Timeout(600)
    void killNineWhileTransactionsAreInFlight(boolean audited) throws Exception {
        int perCycle = 2_000;
        int total = perCycle * CYCLES;
        startBroker(null);
        try (RawClient c = RawClient.connected(port)) {
            for (String q : List.of("orders", "invoices", "audit")) {
                count(c, q);
            }
            publishOrders(c, 0, total);
        }
        Random random = new Random();
        Set<String> committed = ConcurrentHashMap.newKeySet();
        long txn = 1;
        int kills = 0;
        for (int cycle = 0; cycle < CYCLES; cycle++) {
            int killAt = committed.size() + 200 + random.nextInt(perCycle - 400);
            AtomicReference<Throwable> killFailed = new AtomicReference<>();
            Process running = broker;
            Thread killer = new Thread(() -> {
                try {
                    TestAwait.until("commits to reach " + killAt, Duration.ofSeconds(120), () -> committed.size() >= killAt);
                    ChildJvm.kill(running);
                } catch (Throwable t) {
                    killFailed.set(t);
                }
            }, "txn-crash-killer");
            killer.start();
            txn = work(committed, txn, () -> !running.isAlive(), audited);
            killer.join(120_000);
            if (killFailed.get() != null) {
                throw new AssertionError("killing the broker failed", killFailed.get());
            }
            kills++;
            startBroker(null);
        }
        work(committed, txn, () -> false, audited); // drain what is left
        try (RawClient c = RawClient.connected(port)) {
            Set<String> processed = assertWhole(c, total, audited);
            assertEquals(total, processed.size(), "every order processed, each exactly once");
            assertTrue(processed.containsAll(committed), "every commit answered OK survived");
        }
        System.out.printf("TransactionCrashTest (audited %s): %d kill -9 cycles, %d orders, each processed once; %d commits "
                + "answered OK%n", audited, kills, total, committed.size());
    }

    /**
     * X5: the broker stops, as kill -9 would, inside the delete of "invoices", which keeps the commit records
     * (T5) of the transactions that published there only, once the delete has waited for their
     * acknowledgements in "orders" and before its files go; meanwhile a worker on another thread consumes
     * orders and commits invoices. The delete was never answered, so the restart finds "invoices" whole:
     * each order is still in "orders" or has exactly one invoice (the transaction in flight too, and those
     * the closing queue refused), every commit answered OK is there, and "kept", which no transaction
     * touches, holds each of its messages once. Then the rest of the orders is processed, each once.
     */
    @Test
    @Timeout(240)
    void aStopInAQueueDeleteAfterItsWaitForTheTransactionsLeavesEveryTransactionWhole() throws Exception {
        int total = 2_000;
        startBroker("txn-queue-delete-after-x5");
        try (RawClient c = RawClient.connected(port)) {
            for (String q : List.of("orders", "invoices", "audit", "kept")) {
                count(c, q);
            }
            publishOrders(c, 0, total);
            publish(c, "kept", 0, 50);
        }
        Set<String> committed = ConcurrentHashMap.newKeySet();
        AtomicReference<Throwable> workerFailed = new AtomicReference<>();
        Process running = broker;
        Thread worker = new Thread(() -> {
            try {
                work(committed, 1, () -> !running.isAlive(), false, true);
            } catch (Throwable t) {
                workerFailed.set(t);
            }
        }, "txn-x5-worker");
        worker.start();
        TestAwait.until("100 orders committed", Duration.ofSeconds(120), () -> committed.size() >= 100);
        try (RawClient deleter = RawClient.connected(port)) {
            deleter.send(new DeleteQueueFrame(5, "invoices"));
            assertTrue(running.waitFor(60, TimeUnit.SECONDS), "the broker stopped in the delete, past its X5 wait");
        }
        worker.join(60_000);
        if (workerFailed.get() != null) {
            throw new AssertionError("the worker failed", workerFailed.get());
        }
        assertTrue(committed.size() < total, "the delete came while orders were still being processed");

        startBroker(null);
        try (RawClient c = RawClient.connected(port)) {
            Set<String> processed = assertWhole(c, total, false);
            assertTrue(processed.containsAll(committed), "every commit answered OK survived");
            Map<String, Integer> kept = contents(c, "kept", 14);
            assertEquals(50, kept.size(), "kept: " + kept.keySet());
            assertTrue(kept.values().stream().allMatch(n -> n == 1), "kept, each once: " + kept);
        }
        work(committed, 1_000_000, () -> false, false, false); // the rest, on a broker that stops nowhere
        try (RawClient c = RawClient.connected(port)) {
            assertEquals(total, assertWhole(c, total, false).size(), "every order processed, each exactly once");
        }
    }

    /**
     * X3 with X5: a transaction staged an invoice in "invoices" before the queue's delete closed it, and commits
     * after that: the closed queue takes no commit record, so the record goes to the log, and the commit is answered
     * OK. That record must stay until the queue's files are gone: a stop before then brings "invoices" back with the
     * invoice staged, and only the record says it committed. The delete is held in its X5 wait by an earlier
     * commit whose record "invoices" keeps and whose acknowledgement in "orders" is not durable yet (the ack
     * journal's periodic force is a minute away), then the broker stops there, at the end of that wait.
     */
    @Test
    @Timeout(120)
    void aCommitAnsweredWhileItsQueueIsClosedForADeleteSurvivesAStopBeforeTheFilesGo() throws Exception {
        startBroker("txn-queue-delete-after-x5", "storage.sync-interval-ms=60000");
        try (RawClient c = RawClient.connected(port); RawClient deleter = RawClient.connected(port)) {
            count(c, "orders");
            count(c, "invoices");
            publishOrders(c, 0, 1);
            c.send(new SubscribeFrame(2, 7, "orders", 10));
            c.expect(OkFrame.class);
            sendTransaction(c, 1, c.deliveries(1), 9, false); // its record goes into "invoices" (T5)
            assertEquals(9, c.expect(OkFrame.class).requestId());

            long windowBack = c.publishCredit.get();
            c.send(new TxBeginFrame(2, 0));
            PublishFrameBuilder staged = new PublishFrameBuilder(c.alloc(), "invoices");
            staged.add(0, 0, List.of(), "invoice-late".getBytes(StandardCharsets.UTF_8));
            c.send(new TxPublishFrame(2, staged.build()));
            TestAwait.until("the late invoice staged (its window back)", Duration.ofSeconds(30),
                    () -> c.publishCredit.get() > windowBack);
            deleter.send(new DeleteQueueFrame(5, "invoices"));
            ChildJvm.awaitOutput(broker, log, "the delete closed \"invoices\" and waits for its commits (X5)",
                    line -> line.contains("'invoices' is closed for its delete"));
            c.send(new TxCommitFrame(10, 2));
            assertEquals(10, c.expect(OkFrame.class).requestId(), "the commit after the close is answered OK");
            assertTrue(broker.waitFor(60, TimeUnit.SECONDS), "the broker stopped in the delete, past its X5 wait");
        }

        startBroker(null);
        try (RawClient c = RawClient.connected(port)) {
            assertEquals(Map.of(), contents(c, "orders", 11), "order-0 was acknowledged by a commit answered OK");
            assertEquals(Map.of("invoice-order-0", 1, "invoice-late", 1), contents(c, "invoices", 12),
                    "the delete was not answered: \"invoices\" is back with both commits answered OK");
        }
    }

    private long work(Set<String> committed, long txn, java.util.function.BooleanSupplier stopped, boolean audited) throws Exception {
        return work(committed, txn, stopped, audited, false);
    }

    /**
     * A worker: takes up to 10 orders at a time and processes them in one transaction, until the
     * connection is lost ({@code stopped}) or "orders" is empty. With {@code refusalsExpected}, a
     * transaction the broker refuses (a target queue being deleted) is not committed, its orders come
     * back, and the worker stops; else a refusal fails the test. Returns the next transaction id.
     */
    private long work(Set<String> committed, long txn, java.util.function.BooleanSupplier stopped, boolean audited,
                      boolean refusalsExpected) throws Exception {
        try (RawClient c = RawClient.connected(port)) {
            c.send(new SubscribeFrame(2, 7, "orders", 10));
            c.expect(OkFrame.class);
            Map<Long, List<String>> waiting = new HashMap<>();
            while (true) {
                List<RawClient.Delivery> batch = new ArrayList<>();
                Object first = c.received.poll(2, TimeUnit.SECONDS);
                if (first == null || "closed".equals(first)) {
                    if (first == null && !stopped.getAsBoolean() && c.isOpen()) {
                        return txn; // nothing delivered for 2 s: drained
                    }
                    return txn;
                }
                if (!(first instanceof RawClient.Delivery d)) {
                    if (!refusalsExpected && (first instanceof ErrorFrame || first instanceof TxAbortedFrame)) {
                        throw new AssertionError("unexpected " + first);
                    }
                    continue;
                }
                batch.add(d);
                for (Object o; batch.size() < 10 && (o = c.received.poll()) instanceof RawClient.Delivery more; ) {
                    batch.add(more);
                }
                List<String> orders = batch.stream().map(m -> new String(m.payload(), StandardCharsets.UTF_8)).toList();
                long request = txn;
                waiting.put(request, orders);
                sendTransaction(c, txn++, batch, request, audited);
                Object answer;
                do { // deliveries granted by the credit the TX_ACK settled may come first
                    answer = c.received.poll(30, TimeUnit.SECONDS);
                    if (answer instanceof RawClient.Delivery early) {
                        c.received.add(early);
                    }
                } while (answer instanceof RawClient.Delivery || answer instanceof HeartbeatFrame
                        || (refusalsExpected && answer instanceof TxAbortedFrame));
                if (answer instanceof OkFrame ok) {
                    committed.addAll(waiting.remove(ok.requestId()));
                    c.send(new io.sluice.protocol.CreditFrame(7, batch.size()));
                } else if (refusalsExpected && answer instanceof ErrorFrame refused && refused.requestId() == request) {
                    // Rolled back: its orders go back with a delivery count one higher. Retrying them in a loop
                    // against a queue being deleted would take them to the dead-letter queue (maxDeliveries).
                    waiting.remove(request);
                    return txn;
                } else if (answer == null || "closed".equals(answer)) {
                    return txn; // killed: the outcome of this one is decided by the restart
                } else {
                    throw new AssertionError("unexpected answer " + answer);
                }
            }
        }
    }
}
