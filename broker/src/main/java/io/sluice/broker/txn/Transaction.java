package io.sluice.broker.txn;

import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.HeldAcks;
import io.sluice.broker.queue.QueueTransactions;
import io.sluice.protocol.ErrorCode;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * One transaction of a connection: what it staged, what it holds, and where it is in its life.
 *
 * <pre>
 * OPEN --TX_COMMIT--> COMMITTING --staged durable, commit record durable, applied--> FINISHED
 *   |                      `--staged records or commit record refused--> FINISHED (rolled back)
 *   |--TX_ROLLBACK, connection closed--> FINISHED (rolled back)
 *   `--timeout, a refused operation, a cap--> ABORTED (rolled back; told with TX_ABORTED)
 *                                               `--TX_COMMIT (answered with the reason), TX_ROLLBACK--> FINISHED
 * </pre>
 *
 * <p>Threads: everything is the coordinator thread's but the identity, set at construction, {@link #started},
 * the counts behind {@link #countOver}, {@link #timeout} (set on the connection's loop at TX_BEGIN, before the
 * coordinator's thread sees the transaction), and {@link #commitReceived} and the loop's caps counts
 * ({@link #publishedOnLoop}, {@link #publishedBytesOnLoop}, {@link #overCapsOnLoop}), which are the loop's. One hand-over: a commit whose record
 * its target queue keeps (T5) is applied where that record is reported durable (rule "applied where durable" of
 * TransactionCoordinator), which then reads {@link #staged} and {@link #held} and sets {@link #commitRecordId}
 * and {@link #durable}. The coordinator's thread sealed the transaction before handing the record to the queue,
 * changes none of those afterwards, and the hand-over goes through the queue's executor and the store's
 * durability (each a happens-before edge).
 */
final class Transaction {
    enum State { OPEN, COMMITTING, ABORTED, FINISHED }

    /** The messages staged in one queue, pending there until the commit (T2 of QueueTransactions). */
    static final class Staged {
        final BrokerQueue queue;
        long[] ids = new long[16];
        int count;
        long bytes;
        long lastId = -1;

        Staged(BrokerQueue queue) {
            this.queue = queue;
        }

        void add(QueueTransactions.Staging staging) {
            if (count + staging.count() > ids.length) {
                ids = Arrays.copyOf(ids, Math.max(ids.length * 2, count + staging.count()));
            }
            for (int i = 0; i < staging.count(); i++) {
                long id = staging.id(i);
                ids[count++] = id;
                lastId = Math.max(lastId, id);
            }
            bytes += staging.bytes();
        }

        long[] ids() {
            return Arrays.copyOf(ids, count);
        }
    }

    /** The connection's transactions, which forget this one once it is finished. */
    final ConnectionTransactions owner;
    final TransactionLink link;
    /** The id the client chose, unique among its connection's transactions. */
    final long clientId;
    /** The broker-wide number its log records carry. */
    final long number;
    final long startedNanos = System.nanoTime();

    State state = State.OPEN;
    ErrorCode abortCode;
    String abortReason;
    /** The commit record was built: a hold or staging that completes now is not part of it and is undone. */
    boolean sealed;
    /**
     * Set on the coordinator's thread before a rollback (of any cause) takes in {@link #started}: an operation the
     * loop adds after that, for a transaction it still finds open, is taken in (undone) as soon as it completes, and
     * the loop refuses a TX_PUBLISH before its queue stores it. Written after {@link #abortCode} and
     * {@link #abortReason}, which the loop reads once it sees this set.
     */
    volatile boolean undone;
    /** Stagings and holds still in flight at the commit, each taken in once it completes; a commit waits for them. */
    final List<CompletableFuture<?>> pending = new ArrayList<>();
    /**
     * Stagings and holds the connection's loop started, in frame order, not yet taken in. Rule "taken in when
     * needed": one that completes does not bring the coordinator's thread round; that thread takes it in
     * ({@link Operation#takeIn}) at the commit, at the rollback (or whatever else ends the transaction), or at
     * once if it was refused or put the transaction over a cap ({@link #counted}). Filled on the loop, drained on
     * the coordinator's thread: the loop adds before it hands over the TX_COMMIT.
     */
    final Queue<Operation> started = new ConcurrentLinkedQueue<>();
    /**
     * Messages published plus acknowledged, as the queues' executors count them when a staging or hold completes (any
     * thread): what tells them to bring the coordinator round for {@code transactions.max-messages} at once. The cap
     * itself is checked on the coordinator's thread against {@link #messages}. Bytes are not counted here: only a
     * TX_PUBLISH adds them, and the loop refuses one over {@code max-bytes} before its queue sees it.
     */
    private final AtomicLong countedMessages = new AtomicLong();
    /**
     * The connection's loop has passed this transaction's TX_COMMIT: a TX_PUBLISH or TX_ACK after it is not part of it,
     * and the connection's close does not roll it back. Loop only.
     */
    boolean commitReceived;
    /**
     * Messages and bytes (headers plus payload) of the TX_PUBLISH frames the loop handed on, for its caps check, the
     * only one of {@code max-bytes} (rule "caps before the queue" of ConnectionTransactions). Loop only.
     */
    long publishedOnLoop;
    long publishedBytesOnLoop;
    /** Why the loop found a TX_PUBLISH over a cap and handed the rollback over, or null. Loop only. */
    String overCapsOnLoop;
    final Map<BrokerQueue, Staged> staged = new LinkedHashMap<>();
    final Map<BrokerQueue, List<HeldAcks>> held = new LinkedHashMap<>();
    /** On a cluster node: what it publishes, by queue, kept in memory until the commit's entry ({@link ReplicatedCommits}). */
    final Map<BrokerQueue, List<ReplicatedCommits.Messages>> collected = new LinkedHashMap<>();
    /** Messages published plus acknowledged, for {@code transactions.max-messages}. */
    int messages;
    volatile ScheduledFuture<?> timeout;
    long commitRequestId;
    /** Its commit record's id: in the log, or in {@link #commitRecordQueue} if it was written there (T5). */
    long commitRecordId = -1;
    /** The one target queue its commit record was written in, or null if it is in the log. */
    BrokerQueue commitRecordQueue;
    boolean durable;

    Transaction(ConnectionTransactions owner, TransactionLink link, long clientId, long number) {
        this.owner = owner;
        this.link = link;
        this.clientId = clientId;
        this.number = number;
    }

    /** Any thread: counts a completed staging or hold; true if the transaction is now over {@code maxMessages}. */
    boolean countOver(long messages, long maxMessages) {
        return countedMessages.addAndGet(messages) > maxMessages;
    }

    /** The code a TX_COMMIT of this aborted transaction is answered with: its abort's reason says the rest. */
    ErrorCode abortAnswerCode() {
        return abortCode == ErrorCode.TRANSACTION_TIMED_OUT ? ErrorCode.TRANSACTION_TIMED_OUT : ErrorCode.TRANSACTION_ABORTED;
    }

    boolean takesOperations() {
        return state == State.OPEN;
    }

    String describe() {
        return "transaction " + clientId + " of " + link.describe();
    }

    /** Coordinator thread: takes in every operation in {@link #started} that has completed (rule "taken in when needed"). */
    void takeInDone() {
        for (Iterator<Operation> it = started.iterator(); it.hasNext(); ) {
            Operation op = it.next();
            if (op.result.isDone()) {
                it.remove();
                op.takeIn(); // may abort this transaction, which takes in the rest itself; takeIn runs once
            }
        }
    }

    /**
     * Coordinator thread: takes in every operation still in {@link #started}: a completed one now, the others as they
     * complete, on {@code coordinator} (that thread). Returns those others' take-ins; what a completed one undid at once
     * (discarded or released: the transaction is sealed) goes to {@code undone}, if given.
     */
    List<CompletableFuture<?>> takeInAll(List<CompletableFuture<Void>> undone, Executor coordinator) {
        List<CompletableFuture<?>> later = new ArrayList<>();
        for (Operation op; (op = started.poll()) != null; ) {
            if (op.result.isDone()) {
                CompletableFuture<Void> step = op.takeIn();
                if (step != null && undone != null) {
                    undone.add(step);
                }
            } else {
                Operation o = op;
                later.add(op.result.handleAsync((x, failed) -> {
                    o.takeIn();
                    return null;
                }, coordinator));
            }
        }
        return later;
    }

    /**
     * A TX_PUBLISH or TX_ACK under way in its queue ({@link Operation#result}), and what taking its result into the
     * transaction does ({@link Operation#takeIn}, on the coordinator's thread, once: a second call does nothing).
     */
    static final class Operation {
        final CompletableFuture<?> result;
        private final Function<Object, CompletableFuture<Void>> taker;
        private boolean taken;

        /** {@code taker} returns what it undid at once (the transaction is sealed or ended), or null. */
        Operation(CompletableFuture<?> result, Function<Object, CompletableFuture<Void>> taker) {
            this.result = result;
            this.taker = taker;
        }

        /**
         * Coordinator thread: takes the result in, and returns what that undid at once, or null. An operation that
         * failed outright adds nothing (as before).
         */
        CompletableFuture<Void> takeIn() {
            if (taken || result.isCompletedExceptionally()) {
                taken = true;
                return null;
            }
            taken = true;
            return taker.apply(result.join());
        }
    }
}
