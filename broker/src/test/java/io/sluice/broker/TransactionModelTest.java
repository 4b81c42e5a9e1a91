package io.sluice.broker;

import io.sluice.broker.queue.QueueSnapshot;
import io.sluice.broker.txn.TransactionCoordinator;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.CreditFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.FlowFrame;
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
import io.sluice.protocol.TxRollbackFrame;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.statistics.Statistics;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Transactions against a model, through a real broker over a socket in raw frames: random interleavings,
 * on queues A and B, of plain publishes (confirmed) and acks, TX_BEGIN, TX_PUBLISH to either queue, TX_ACK
 * of deliveries, commits, rollbacks, timeouts, aborts for a refused TX_PUBLISH, a connection closed with
 * transactions open, and broker restarts. The model knows, per queue, exactly which payloads are stored and not acknowledged and, per
 * transaction, what it staged and what it holds. After every step the broker must match it:
 * <ul>
 *   <li>its one consumer per queue, whose credit never runs out, has been delivered exactly the stored
 *       payloads that no transaction holds, each once, with a delivery count one above the last (so a
 *       drain of the queue is exactly the model's multiset, and a rollback's redeliveries count);</li>
 *   <li>each queue's backlog, in-flight count and consumer credit are the model's; with no
 *       transaction about to time out, so are its backlog bytes (staged publishes reserve theirs, T2) and
 *       the coordinator's figures: open transactions, unfinished log records, commits, rollbacks and
 *       timeouts.</li>
 * </ul>
 * A transaction with a short timeout never commits here: whatever of it reaches the broker before or after
 * its timeout, it ends rolled back, so the model needs no guess about timing. Only its held deliveries may
 * come back at any moment, which the model allows, even into a connection about to close (the broker then
 * counts one delivery the model never saw). Each run ends with every such transaction timed out, a last
 * restart, and a drain.
 */
class TransactionModelTest {
    private static final List<String> QUEUES = List.of("A", "B");
    /** Each consumer's credit; topped up after each settlement, as a client does, so every ready message is delivered. */
    private static final int CREDIT = 1000;
    /** More open transactions than this on the worker's connection and TX_BEGIN is skipped (the broker's cap is 16). */
    private static final int MAX_OPEN = 6;
    private static final Duration SETTLE = Duration.ofSeconds(10);
    /** How the broker names the transaction of a TX_PUBLISH it refused before storing it. */
    private static final Pattern REFUSED_PUBLISH = Pattern.compile("names transaction (\\d+) of");

    sealed interface Op permits Publish, Ack, Begin, TxPublish, TxAck, Commit, Rollback, Refused, Expire, CloseConnection,
            Restart {
    }

    /** Plain PUBLISH of {@code count} new payloads to a queue, waiting for the CONFIRM. */
    record Publish(int queue, int count) implements Op {
    }

    /** Plain ACK of one delivery out with a queue's consumer, the {@code pick}-th in arrival order (modulo). */
    record Ack(int queue, int pick) implements Op {
    }

    /** TX_BEGIN; {@code timeoutMs} 0 is the broker's default (never reached here), else the transaction will time out. */
    record Begin(int timeoutMs) implements Op {
    }

    /** TX_PUBLISH of {@code count} new payloads to a queue in the {@code txn}-th open transaction (modulo), begun if none is. */
    record TxPublish(int txn, int queue, int count) implements Op {
    }

    /** TX_ACK of up to {@code count} deliveries out with a queue's consumer, from the {@code pick}-th on; begun if none is open. */
    record TxAck(int txn, int queue, int pick, int count) implements Op {
    }

    /** TX_COMMIT of the {@code txn}-th open transaction without a timeout of its own, answered OK. */
    record Commit(int txn) implements Op {
    }

    record Rollback(int txn) implements Op {
    }

    /**
     * A TX_PUBLISH of the {@code txn}-th open transaction without a timeout of its own to a queue that does not
     * exist: the broker rolls it back at once (TX_ABORTED TRANSACTION_ABORTED) and refuses its TX_COMMIT.
     */
    record Refused(int txn) implements Op {
    }

    /**
     * Waits for the {@code txn}-th transaction with a short timeout to be aborted (the others may be too by
     * then, and still take operations); {@code late}, then sends it a TX_PUBLISH, refused with ERROR to no request
     * before anything is stored, and a TX_ACK, which must change nothing but return the delivery; then has its
     * TX_COMMIT refused.
     */
    record Expire(int txn, boolean late) implements Op {
    }

    /** The worker's connection closes, open transactions and all; a new one subscribes again. */
    record CloseConnection() implements Op {
    }

    /** The broker shuts down while the worker is connected, and starts again on the same data. */
    record Restart() implements Op {
    }

    @Provide
    Arbitrary<List<Op>> operations() {
        Arbitrary<Integer> queue = Arbitraries.integers().between(0, QUEUES.size() - 1);
        Arbitrary<Integer> pick = Arbitraries.integers().between(0, 7);
        Arbitrary<Integer> count = Arbitraries.integers().between(1, 3);
        Arbitrary<Op> op = Arbitraries.frequencyOf(
                Tuple.of(5, Combinators.combine(queue, count).as(Publish::new)),
                Tuple.of(3, Combinators.combine(queue, pick).as(Ack::new)),
                Tuple.of(3, Arbitraries.of(0, 0, 50, 200).map(Begin::new)),
                Tuple.of(6, Combinators.combine(pick, queue, count).as(TxPublish::new)),
                Tuple.of(6, Combinators.combine(pick, queue, pick, Arbitraries.integers().between(1, 2)).as(TxAck::new)),
                Tuple.of(6, pick.map(Commit::new)),
                Tuple.of(2, pick.map(Rollback::new)),
                Tuple.of(1, pick.map(Refused::new)),
                Tuple.of(2, Combinators.combine(pick, Arbitraries.of(false, true)).as(Expire::new)),
                Tuple.of(1, Arbitraries.just(new CloseConnection())),
                Tuple.of(1, Arbitraries.just(new Restart())));
        return op.list().ofMinSize(20).ofMaxSize(60);
    }

    // Each try starts a broker and restarts it at least once: 20 tries of 20 to 60 steps take about 15 s on
    // two quiet cores, 45 s under a load of 15.
    @Property(tries = 20)
    void theBrokerMatchesTheModelAfterEveryStep(@ForAll("operations") List<Op> ops) throws Exception {
        Path dir = Files.createTempDirectory("txn-model");
        boolean passed = false;
        Run run = new Run(dir);
        try {
            for (Op op : ops) {
                Statistics.label("operation").collect(op.getClass().getSimpleName() + (run.apply(op) ? "" : " (skipped)"));
                run.check();
            }
            while (run.apply(new Expire(0, false))) {
                run.check();
            }
            run.apply(new Restart());
            run.check();
            run.drain();
            run.check();
            passed = true;
        } finally {
            run.close();
            if (passed) {
                try (Stream<Path> files = Files.walk(dir)) {
                    files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
                }
            } else {
                System.err.println("TransactionModelTest: the failed run's data directory is kept at " + dir);
            }
        }
    }

    // ------------------------------------------------------------------ the model

    /** Where a stored message is: ready for delivery, out with the consumer, or held by a transaction. */
    private enum Where { READY, OUT, HELD }

    private static final class Stored {
        final String queue;
        final String payload;
        /** Deliveries so far; the next has this plus one. */
        int deliveries;
        Where where = Where.READY;
        long id;
        Txn heldBy;
        /**
         * Held by a short-timeout transaction when the worker's connection closed: the timeout may have given it
         * back and the broker delivered it into that connection, a delivery it counts and the model never saw.
         */
        boolean mayHaveBeenDeliveredUnseen;

        Stored(String queue, String payload) {
            this.queue = queue;
            this.payload = payload;
        }
    }

    private static final class Txn {
        final long id;
        final int timeoutMs;
        final Map<String, List<String>> staged = new LinkedHashMap<>();
        final List<Stored> held = new ArrayList<>();

        Txn(long id, int timeoutMs) {
            this.id = id;
            this.timeoutMs = timeoutMs;
        }

        boolean expires() {
            return timeoutMs > 0;
        }

        int stagedCount() {
            return staged.values().stream().mapToInt(List::size).sum();
        }
    }

    /** What the coordinator must have counted since this broker instance started. */
    private static final class Counted {
        long commits;
        long rollbacks;
        long timeouts;
        /** Transactions with a short timeout that a closed connection ended: counted as a rollback or a timeout. */
        long eitherRollbackOrTimeout;
        /** Rolled back by the broker for a refused operation. */
        long refusals;
    }

    // ------------------------------------------------------------------ one run: the broker, the worker's connection, the model

    private static final class Run implements AutoCloseable {
        private final Path dir;
        private Broker broker;
        private RawClient worker;
        private boolean closing;
        private long producerId = 0x7A_5000L;
        private long sequence = 1;
        private long nextTxnId = 1;
        private long nextRequestId = 100;
        private int nextPayload = 1;
        private final Deque<Object> answers = new ArrayDeque<>();
        private final Map<Long, TxAbortedFrame> aborted = new HashMap<>();
        /**
         * Short-timeout transactions whose TX_PUBLISH the broker refused as sent to a transaction it had rolled back
         * (ERROR TRANSACTION_TIMED_OUT to no request): it may come for any TX_PUBLISH sent once the timeout passed.
         */
        private final Set<Long> publishRefused = new HashSet<>();
        /** Transactions whose refused TX_PUBLISH was sent: their TX_ABORTED is expected. */
        private final Set<Long> refusing = new HashSet<>();
        /** Per queue, the stored and unacknowledged messages by payload (unique in a run). */
        private final Map<String, Map<String, Stored>> stored = new LinkedHashMap<>();
        /** Per queue, the deliveries out with its consumer, in arrival order. */
        private final Map<String, List<Stored>> out = new LinkedHashMap<>();
        private final Map<String, Long> credit = new HashMap<>();
        /** Transactions begun and not yet ended, oldest first. */
        private final List<Txn> open = new ArrayList<>();
        /**
         * Committed transactions that published: each keeps its commit record in the log until every message it
         * published is consumed (X3), across restarts too.
         */
        private final List<Txn> committedWithPublishes = new ArrayList<>();
        private Counted counted = new Counted();

        Run(Path dir) throws InterruptedException {
            this.dir = dir;
            for (String q : QUEUES) {
                stored.put(q, new LinkedHashMap<>());
                out.put(q, new ArrayList<>());
            }
            broker = TestBrokers.start(dir, Map.of());
            connect(true);
        }

        /** Carries out one operation on the broker and in the model; false if it did not apply (nothing to pick). */
        boolean apply(Op op) throws InterruptedException {
            if (op instanceof Publish p) {
                publish(QUEUES.get(p.queue()), p.count());
            } else if (op instanceof Ack a) {
                List<Stored> candidates = out.get(QUEUES.get(a.queue()));
                if (candidates.isEmpty()) {
                    return false;
                }
                Stored m = candidates.get(a.pick() % candidates.size());
                worker.send(new AckFrame(tag(m.queue), List.of(IdRange.single(m.id))));
                settled(m.queue, List.of(m));
                remove(m);
            } else if (op instanceof Begin b) {
                if (open.size() >= MAX_OPEN) {
                    return false;
                }
                begin(b.timeoutMs());
            } else if (op instanceof TxPublish p) {
                txPublish(openOrBegin(p.txn()), QUEUES.get(p.queue()), p.count());
            } else if (op instanceof TxAck a) {
                String q = QUEUES.get(a.queue());
                if (out.get(q).isEmpty()) {
                    return false;
                }
                txAck(openOrBegin(a.txn()), q, a.pick(), a.count());
            } else if (op instanceof Commit c) {
                Txn t = pickLasting(c.txn());
                if (t == null) {
                    return false;
                }
                Statistics.label("commit").collect(t.held.isEmpty() ? "no acks" : "acks",
                        t.stagedCount() == 0 ? "no publishes" : "publishes");
                // The model moves first: its publishes may be delivered before the OK arrives.
                open.remove(t);
                t.staged.forEach((q, payloads) -> payloads.forEach(p -> stored.get(q).put(p, new Stored(q, p))));
                if (t.stagedCount() > 0) {
                    committedWithPublishes.add(t);
                }
                t.held.forEach(this::remove);
                counted.commits++;
                long request = nextRequestId++;
                worker.send(new TxCommitFrame(request, t.id));
                assertEquals(request, answer(OkFrame.class, "OK to TX_COMMIT of transaction " + t.id).requestId());
            } else if (op instanceof Rollback r) {
                Txn t = pickLasting(r.txn());
                if (t == null) {
                    return false;
                }
                rolledBack(t); // first: what it held may be delivered again before the OK arrives
                counted.rollbacks++;
                long request = nextRequestId++;
                worker.send(new TxRollbackFrame(request, t.id));
                assertEquals(request, answer(OkFrame.class, "OK to TX_ROLLBACK of transaction " + t.id).requestId());
            } else if (op instanceof Refused r) {
                Txn t = pickLasting(r.txn());
                if (t == null) {
                    return false;
                }
                rolledBack(t); // first: the abort gives back what it held at once
                refusing.add(t.id);
                PublishFrameBuilder b = new PublishFrameBuilder(worker.alloc(), "nowhere");
                b.add(0, 0, List.of(), bytes("refused"));
                worker.send(new TxPublishFrame(t.id, b.build()));
                TxAbortedFrame frame = awaitAborted(t);
                assertEquals(ErrorCode.TRANSACTION_ABORTED, frame.errorCode(), frame.message());
                long request = nextRequestId++;
                worker.send(new TxCommitFrame(request, t.id));
                ErrorFrame refused = answer(ErrorFrame.class, "the refusal of TX_COMMIT of aborted transaction " + t.id);
                assertEquals(request, refused.requestId());
                assertEquals(ErrorCode.TRANSACTION_ABORTED.code(), refused.code(), refused.message());
                refusing.remove(t.id);
                counted.refusals++;
            } else if (op instanceof Expire e) {
                List<Txn> expiring = open.stream().filter(Txn::expires).toList();
                if (expiring.isEmpty()) {
                    return false;
                }
                Txn t = expiring.get(e.txn() % expiring.size());
                TxAbortedFrame frame = awaitAborted(t);
                assertEquals(ErrorCode.TRANSACTION_TIMED_OUT, frame.errorCode(), frame.message());
                if (e.late()) {
                    txPublish(t, QUEUES.get(e.txn() % QUEUES.size()), 1);
                    awaitPublishRefused(t);
                    QUEUES.stream().filter(q -> !out.get(q).isEmpty()).findFirst().ifPresent(q -> txAck(t, q, e.txn(), 1));
                }
                long request = nextRequestId++;
                worker.send(new TxCommitFrame(request, t.id));
                ErrorFrame refused = answer(ErrorFrame.class, "the refusal of TX_COMMIT of timed-out transaction " + t.id);
                assertEquals(request, refused.requestId());
                assertEquals(ErrorCode.TRANSACTION_TIMED_OUT.code(), refused.code(), refused.message());
                rolledBack(t);
                counted.timeouts++;
            } else if (op instanceof CloseConnection) {
                disconnect();
                connect(false);
            } else if (op instanceof Restart) {
                closing = true;
                broker.close();
                disconnect();
                broker = TestBrokers.start(dir, Map.of());
                counted = new Counted();
                connect(false);
            }
            return true;
        }

        private void txPublish(Txn t, String q, int count) {
            PublishFrameBuilder b = new PublishFrameBuilder(worker.alloc(), q);
            List<String> payloads = t.staged.computeIfAbsent(q, k -> new ArrayList<>());
            for (int i = 0; i < count; i++) {
                String payload = "t" + nextPayload++;
                b.add(0, 0, List.of(), bytes(payload));
                payloads.add(payload);
            }
            worker.send(new TxPublishFrame(t.id, b.build()));
        }

        /** TX_ACK of up to {@code count} deliveries out with {@code q}'s consumer, from the {@code pick}-th on (modulo). */
        private void txAck(Txn t, String q, int pick, int count) {
            List<Stored> candidates = out.get(q);
            List<Stored> taken = new ArrayList<>();
            for (int i = 0; i < Math.min(count, candidates.size()); i++) {
                taken.add(candidates.get((pick + i) % candidates.size()));
            }
            List<IdRange> ids = new ArrayList<>();
            for (Stored m : taken) {
                ids.add(IdRange.single(m.id));
            }
            worker.send(new TxAckFrame(t.id, tag(q), ids));
            settled(q, taken);
            for (Stored m : taken) {
                m.where = Where.HELD;
                m.heldBy = t;
                t.held.add(m);
            }
        }

        private Txn begin(int timeoutMs) {
            Txn t = new Txn(nextTxnId++, timeoutMs);
            worker.send(new TxBeginFrame(t.id, t.timeoutMs));
            open.add(t);
            return t;
        }

        /** The {@code pick}-th open transaction; if none is open, a new one with the broker's default timeout. */
        private Txn openOrBegin(int pick) {
            return open.isEmpty() ? begin(0) : open.get(pick % open.size());
        }

        /** The {@code pick}-th open transaction without a short timeout, or null if there is none. */
        private Txn pickLasting(int pick) {
            List<Txn> lasting = open.stream().filter(t -> !t.expires()).toList();
            return lasting.isEmpty() ? null : lasting.get(pick % lasting.size());
        }

        private void publish(String q, int count) throws InterruptedException {
            PublishFrameBuilder b = new PublishFrameBuilder(worker.alloc(), q);
            long first = sequence;
            for (int i = 0; i < count; i++) {
                String payload = "p" + nextPayload++;
                b.add(producerId, sequence++, List.of(), bytes(payload));
                stored.get(q).put(payload, new Stored(q, payload));
            }
            worker.send(b.build());
            long confirmed = 0;
            while (confirmed < count) {
                ConfirmFrame confirm = answer(ConfirmFrame.class, "CONFIRM of sequences " + first + ".." + (sequence - 1));
                assertEquals(producerId, confirm.producerId());
                for (IdRange r : confirm.sequences()) {
                    confirmed += r.to() - r.from() + 1;
                }
            }
            assertEquals(count, confirmed, "confirmed sequences of one PUBLISH");
        }

        /** Settled deliveries of a consumer: off it, and its credit topped up as a client tops it up after an ACK. */
        private void settled(String q, List<Stored> messages) {
            out.get(q).removeAll(messages);
            worker.send(new CreditFrame(tag(q), messages.size()));
            credit.merge(q, (long) messages.size(), Long::sum);
        }

        private void remove(Stored m) {
            stored.get(m.queue).remove(m.payload);
        }

        /** A transaction ended without a commit: its staged payloads are gone, what it held is ready again. */
        private void rolledBack(Txn t) {
            open.remove(t);
            for (Stored m : t.held) {
                if (m.where == Where.HELD && m.heldBy == t) {
                    m.where = Where.READY;
                    m.heldBy = null;
                }
            }
        }

        /** Connects the worker, declares (first time) and subscribes one consumer per queue with {@link #CREDIT}. */
        private void connect(boolean declare) throws InterruptedException {
            worker = RawClient.connected(broker.port());
            closing = false;
            producerId++;
            sequence = 1;
            for (String q : QUEUES) {
                if (declare) {
                    worker.send(new DeclareQueueFrame(1, q, QueueSettings.EMPTY));
                    answer(OkFrame.class, "OK to DECLARE " + q);
                }
                worker.send(new SubscribeFrame(2, tag(q), q, CREDIT));
                answer(OkFrame.class, "OK to SUBSCRIBE " + q);
                credit.put(q, (long) CREDIT);
            }
        }

        /** The worker's connection closes: its open transactions are rolled back, its deliveries ready again. */
        private void disconnect() {
            closing = true;
            worker.close();
            for (Txn t : open) {
                if (t.expires()) {
                    t.held.stream().filter(m -> m.where == Where.HELD && m.heldBy == t)
                            .forEach(m -> m.mayHaveBeenDeliveredUnseen = true);
                }
            }
            for (Txn t : List.copyOf(open)) {
                rolledBack(t);
                if (t.expires()) {
                    counted.eitherRollbackOrTimeout++;
                } else {
                    counted.rollbacks++;
                }
            }
            for (String q : QUEUES) {
                for (Stored m : out.get(q)) {
                    m.where = Where.READY;
                }
                out.get(q).clear();
            }
            answers.clear();
            aborted.clear();
        }

        private static byte[] bytes(String payload) {
            return payload.getBytes(StandardCharsets.UTF_8);
        }

        private static int tag(String q) {
            return QUEUES.indexOf(q) + 1;
        }

        // -------------------------------------------------------------- what comes back from the broker

        /** Takes the next frame, waiting until the deadline for one, and files it. */
        private void route(long deadlineNanos) throws InterruptedException {
            route(worker.received.poll(Math.max(1, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS));
        }

        /** Files every frame already received. */
        private void routeArrived() {
            for (Object frame = worker.received.poll(); frame != null; frame = worker.received.poll()) {
                route(frame);
            }
        }

        /** Files a frame: a delivery is checked against the model at once. */
        private void route(Object frame) {
            if (frame == null || frame instanceof HeartbeatFrame || frame instanceof FlowFrame) {
                return;
            }
            if (frame instanceof RawClient.Delivery d) {
                delivered(d);
            } else if (frame instanceof TxAbortedFrame t) {
                Txn txn = open.stream().filter(o -> o.id == t.txnId()).findFirst().orElse(null);
                if (!refusing.contains(t.txnId()) && (txn == null || !txn.expires())) {
                    fail("TX_ABORTED of transaction " + t.txnId() + ", which the broker had no reason to abort: "
                            + t.errorCode() + " " + t.message());
                }
                aborted.put(t.txnId(), t);
            } else if (frame instanceof ErrorFrame e && e.requestId() == 0 && e.code() == ErrorCode.TRANSACTION_TIMED_OUT.code()) {
                Matcher named = REFUSED_PUBLISH.matcher(e.message());
                long txn = named.find() ? Long.parseLong(named.group(1)) : -1;
                if (open.stream().noneMatch(o -> o.id == txn && o.expires())) {
                    fail("a TX_PUBLISH refused as sent to a timed-out transaction none of the model's is: " + e.message());
                }
                publishRefused.add(txn);
            } else if ("closed".equals(frame) || frame instanceof CloseFrame) {
                if (!closing) {
                    fail("the broker closed the worker's connection: " + frame);
                }
            } else {
                answers.add(frame);
            }
        }

        private void delivered(RawClient.Delivery d) {
            String q = QUEUES.get(d.consumerTag() - 1);
            String payload = new String(d.payload(), StandardCharsets.UTF_8);
            Stored m = stored.get(q).get(payload);
            if (m == null) {
                fail("queue " + q + " delivered " + payload + ", which the model does not store there (acknowledged, "
                        + "never committed, or published elsewhere)");
            }
            // A short-timeout transaction's held deliveries come back whenever its timeout passes.
            boolean releasedByTimeout = m.where == Where.HELD && m.heldBy.expires();
            if (m.where != Where.READY && !releasedByTimeout) {
                fail("queue " + q + " delivered " + payload + " while it is " + m.where
                        + (m.heldBy != null ? " by transaction " + m.heldBy.id : "") + ": delivered twice");
            }
            if (releasedByTimeout) {
                m.heldBy.held.remove(m);
                m.heldBy = null;
            }
            m.deliveries++;
            if (m.mayHaveBeenDeliveredUnseen && d.deliveryCount() == m.deliveries + 1) {
                m.deliveries++; // the delivery into the closed connection (see the field), counted by the broker
            }
            m.mayHaveBeenDeliveredUnseen = false;
            assertEquals(m.deliveries, d.deliveryCount(), "delivery count of " + payload + " in queue " + q);
            m.where = Where.OUT;
            m.id = d.id();
            out.get(q).add(m);
            credit.merge(q, -1L, Long::sum);
        }

        private <T> T answer(Class<T> type, String what) throws InterruptedException {
            long deadline = System.nanoTime() + SETTLE.toNanos();
            while (answers.isEmpty() && System.nanoTime() < deadline) {
                route(deadline);
            }
            Object frame = answers.poll();
            if (!type.isInstance(frame)) {
                fail("expected " + what + ", got " + frame);
            }
            return type.cast(frame);
        }

        /** Waits for the ERROR that refuses a TX_PUBLISH sent to {@code t} after its timeout rolled it back. */
        private void awaitPublishRefused(Txn t) throws InterruptedException {
            long deadline = System.nanoTime() + SETTLE.toNanos();
            while (!publishRefused.contains(t.id) && System.nanoTime() < deadline) {
                route(deadline);
            }
            if (!publishRefused.remove(t.id)) {
                fail("no ERROR refusing the TX_PUBLISH to timed-out transaction " + t.id + " within " + SETTLE.toMillis() + " ms");
            }
        }

        private TxAbortedFrame awaitAborted(Txn t) throws InterruptedException {
            long deadline = System.nanoTime() + SETTLE.toNanos() + TimeUnit.MILLISECONDS.toNanos(t.timeoutMs);
            while (!aborted.containsKey(t.id) && System.nanoTime() < deadline) {
                route(deadline);
            }
            TxAbortedFrame frame = aborted.remove(t.id);
            if (frame == null) {
                fail("no TX_ABORTED for transaction " + t.id + " within " + t.timeoutMs + " ms plus " + SETTLE.toMillis() + " ms");
            }
            return frame;
        }

        // -------------------------------------------------------------- the check

        /**
         * Every ready message delivered (each once, checked as it arrives), then the broker's figures equal
         * the model's; both waited for under a deadline, since the broker applies acks and rollbacks on its
         * own threads. Deliveries keep being filed while the figures are read: a short-timeout
         * transaction may give back what it held at any moment, which changes the model's figures too.
         */
        void check() throws Exception {
            long deadline = System.nanoTime() + SETTLE.toNanos();
            while (ready() > 0 && System.nanoTime() < deadline) {
                route(deadline);
            }
            assertEquals(List.of(), readyPayloads(), "stored messages no transaction holds, not delivered within " + SETTLE);
            List<Map<String, Long>> figures = TestAwait.value("the broker's figures (second) to be the model's (first)", SETTLE,
                    () -> {
                        routeArrived();
                        Map<String, Long> expected = expectedFigures();
                        return List.of(expected, actualFigures(expected));
                    }, both -> both.get(0).equals(both.get(1)));
            assertEquals(figures.get(0), figures.get(1));
            if (!answers.isEmpty()) {
                fail("answers nobody asked for: " + answers);
            }
        }

        /** Acknowledges everything out with the consumers: the queues end empty. */
        void drain() {
            for (String q : QUEUES) {
                List<Stored> all = List.copyOf(out.get(q));
                if (all.isEmpty()) {
                    continue;
                }
                List<IdRange> ids = new ArrayList<>();
                for (Stored m : all) {
                    ids.add(IdRange.single(m.id));
                    remove(m);
                }
                worker.send(new AckFrame(tag(q), ids));
                settled(q, all);
            }
        }

        private long ready() {
            return readyPayloads().size();
        }

        private List<String> readyPayloads() {
            List<String> ready = new ArrayList<>();
            stored.values().forEach(byPayload -> byPayload.values().stream().filter(m -> m.where == Where.READY)
                    .forEach(m -> ready.add(m.queue + ":" + m.payload)));
            return ready;
        }

        private boolean publishedSomethingStillStored(Txn t) {
            return t.staged.entrySet().stream().anyMatch(e -> e.getValue().stream().anyMatch(stored.get(e.getKey())::containsKey));
        }

        private Map<String, Long> expectedFigures() {
            Map<String, Long> f = new TreeMap<>();
            boolean timing = open.stream().anyMatch(Txn::expires);
            for (String q : QUEUES) {
                f.put(q + ".backlog", (long) stored.get(q).size());
                f.put(q + ".inFlight", (long) out.get(q).size());
                f.put(q + ".consumers", 1L);
                f.put(q + ".credit", credit.get(q));
                if (!timing) {
                    long bytes = 0;
                    for (Stored m : stored.get(q).values()) {
                        bytes += m.payload.length();
                    }
                    for (Txn t : open) {
                        for (String p : t.staged.getOrDefault(q, List.of())) {
                            bytes += p.length();
                        }
                    }
                    f.put(q + ".backlogBytes", bytes);
                }
            }
            if (!timing) {
                f.put("txn.open", (long) open.size());
                f.put("txn.logRecords", committedWithPublishes.stream().filter(this::publishedSomethingStillStored).count());
                f.put("txn.commits", counted.commits);
                f.put("txn.rollbacksAndTimeouts", counted.rollbacks + counted.timeouts + counted.eitherRollbackOrTimeout);
                f.put("txn.rollbacksBelowTheCertain", 0L);
                f.put("txn.timeoutsBelowTheCertain", 0L);
                f.put("txn.abortsOtherThanTimeouts", counted.refusals);
            }
            return f;
        }

        private Map<String, Long> actualFigures(Map<String, Long> wanted) throws Exception {
            Map<String, Long> f = new TreeMap<>();
            for (String q : QUEUES) {
                QueueSnapshot s = broker.queues().get(q).snapshot().get(10, TimeUnit.SECONDS);
                f.put(q + ".backlog", s.backlogMessages());
                f.put(q + ".inFlight", (long) s.inFlightMessages());
                f.put(q + ".consumers", (long) s.consumers().size());
                f.put(q + ".credit", s.consumers().stream().mapToLong(QueueSnapshot.ConsumerFigures::credit).sum());
                f.put(q + ".backlogBytes", s.backlogBytes());
            }
            TransactionCoordinator c = broker.transactions();
            f.put("txn.open", (long) c.open());
            f.put("txn.logRecords", c.logRecords());
            f.put("txn.commits", c.counts().commits());
            f.put("txn.rollbacksAndTimeouts", c.counts().rollbacks() + c.counts().timeouts());
            f.put("txn.rollbacksBelowTheCertain", Math.max(0, counted.rollbacks - c.counts().rollbacks()));
            f.put("txn.timeoutsBelowTheCertain", Math.max(0, counted.timeouts - c.counts().timeouts()));
            f.put("txn.abortsOtherThanTimeouts", c.counts().aborts() - c.counts().timeouts());
            f.keySet().retainAll(wanted.keySet());
            return f;
        }

        @Override
        public void close() {
            closing = true;
            if (worker != null) {
                worker.close();
            }
            if (broker != null) {
                broker.close();
            }
        }
    }
}
