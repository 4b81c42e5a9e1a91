package io.sluice.broker.txn;

import io.netty.util.concurrent.DefaultEventExecutor;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.EventExecutor;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.error.ErrorCodes;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.HeldAcks;
import io.sluice.broker.queue.QueueManager;
import io.sluice.broker.queue.QueueTransactions;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.PublishCursor;
import io.sluice.protocol.PublishFrame;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.StoredMessage;
import io.sluice.storage.durability.FileForcer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Local transactions, broker-wide (docs/transactions.md): stages what transactions publish in the
 * {@link TransactionLog}, holds what they acknowledge in their queues ({@link QueueTransactions}),
 * commits each with one record in the log, applies the commit to the queues, and rolls back what
 * is not committed: on TX_ROLLBACK, a closed connection, a timeout, a refused operation, and at a
 * start for what a crash interrupted before the commit record was durable.
 *
 * <p>Rules:
 * <ul>
 *   <li>X1 Nothing a transaction publishes reaches its queue before its commit record is durable;
 *       OK to TX_COMMIT goes out once it is durable and the commit was applied.</li>
 *   <li>X2 Commits are applied to each queue in the order of their commit records, each publish
 *       under the coordinator's producer id and a sequence handed out in that order (T3 of
 *       {@link QueueTransactions}); a queue whose apply failed takes the later ones only after it, so
 *       a retry, or a redo at the next start, never finds a sequence below one stored after it.</li>
 *   <li>X3 A transaction's log records are acknowledged only once nothing depends on them: at once
 *       after a rollback; after a commit once its publishes and acknowledgements are durable in
 *       their queues. A start redoes every commit whose records are still there.</li>
 * </ul>
 *
 * <p>Threads: one thread, {@code sluice-transactions}, owns every transaction and the log. A
 * connection's loop hands it work through {@link ConnectionTransactions}; queues' work goes to their
 * executors and comes back here.
 */
public final class TransactionCoordinator implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TransactionCoordinator.class);
    private static final long APPLY_RETRY_MS = 1000;

    private final EventExecutor executor = new DefaultEventExecutor(new DefaultThreadFactory("sluice-transactions", true));
    private final TransactionLog log;
    private final QueueManager queues;
    final BrokerConfig.Transactions limits;
    /** Coordinator thread: the next sequence a committed publish is applied under (X2). */
    private long nextApplySequence;
    /** The next transaction number; any thread (connections take one at TX_BEGIN). */
    private final java.util.concurrent.atomic.AtomicLong nextNumber;
    /** Coordinator thread: commits written and waiting for durability, in log order (X2). */
    private final ArrayDeque<Transaction> committing = new ArrayDeque<>();
    /** Coordinator thread: per queue, the applies in order; the head is running or waiting for its retry (X2). */
    private final Map<BrokerQueue, ArrayDeque<ApplyJob>> applying = new HashMap<>();
    /** Open and committing transactions, for the metrics; written on the coordinator thread. */
    private final Set<Transaction> live = ConcurrentHashMap.newKeySet();
    private volatile long commits;
    private volatile long rollbacks;
    private volatile long timeouts;
    private volatile long aborts;
    private volatile long applyFailures;

    private TransactionCoordinator(TransactionLog log, QueueManager queues, BrokerConfig.Transactions limits) {
        this.log = log;
        this.queues = queues;
        this.limits = limits;
        this.nextNumber = new java.util.concurrent.atomic.AtomicLong(System.currentTimeMillis() << 16);
    }

    /**
     * Opens the transaction log under {@code dataDirectory} and recovers it (X3): a transaction without
     * a durable commit record is rolled back, one with it applied again where it is not yet. Returns
     * once the commits found are applied (or queued for a retry), before any client is served.
     */
    public static TransactionCoordinator open(Path dataDirectory, StoreConfig storage, FileForcer forcer, QueueManager queues,
                                              BrokerConfig.Transactions limits) {
        TransactionLog log = TransactionLog.open(dataDirectory, storage, forcer);
        TransactionCoordinator coordinator = new TransactionCoordinator(log, queues, limits);
        try {
            CompletableFuture.supplyAsync(coordinator::recover, coordinator.executor).thenCompose(done -> done).join();
        } catch (RuntimeException e) {
            coordinator.close();
            throw e;
        }
        return coordinator;
    }

    /** The transactions of a new connection; used on its event loop. */
    public ConnectionTransactions forConnection(TransactionLink link) {
        return new ConnectionTransactions(this, link);
    }

    EventExecutor executor() {
        return executor;
    }

    long newNumber() {
        return nextNumber.getAndIncrement();
    }

    // ------------------------------------------------------------------ recovery

    private CompletableFuture<Void> recover() {
        List<TransactionLog.Interrupted> interrupted = log.interrupted();
        long highest = 0;
        // Asked of every queue at once, then read: one round trip to the queues' executors, not one per queue.
        List<CompletableFuture<Long>> applied = new ArrayList<>();
        for (BrokerQueue q : queues.all()) {
            applied.add(q.transactions().appliedThroughAsync());
        }
        for (CompletableFuture<Long> f : applied) {
            highest = Math.max(highest, f.join());
        }
        long numbers = nextNumber.get();
        int rolledBack = 0;
        List<CompletableFuture<Void>> redone = new ArrayList<>();
        for (TransactionLog.Interrupted t : interrupted) {
            numbers = Math.max(numbers, t.number() + 1);
            long[] records = t.records().stream().mapToLong(Long::longValue).toArray();
            if (t.commit() == null) {
                log.finished(records);
                rolledBack++;
                continue;
            }
            highest = Math.max(highest, t.commit().applyBase() + t.commit().publishCount() - 1);
            redone.add(applyCommit(t.commit(), false, null, records));
        }
        nextNumber.set(numbers);
        nextApplySequence = highest + 1;
        if (!interrupted.isEmpty()) {
            LOG.info("Transaction log: {} transactions interrupted by the last stop rolled back, {} committed ones applied again "
                    + "where they were not yet.", rolledBack, redone.size());
        }
        return CompletableFuture.allOf(redone.toArray(CompletableFuture[]::new));
    }

    // ------------------------------------------------------------------ operations (coordinator thread)

    void begin(Transaction t, long timeoutMs) {
        live.add(t);
        t.timeout = executor.schedule(() -> {
            if (t.takesOperations()) {
                timeouts++;
                abort(t, ErrorCode.TRANSACTION_TIMED_OUT, t.describe() + " was open longer than its timeout of "
                        + timeoutMs + " ms and was rolled back");
            }
        }, timeoutMs, TimeUnit.MILLISECONDS);
    }

    /** TX_PUBLISH: stages the frame's messages in the log and reserves them in their queue (T2); releases the frame. */
    void stage(Transaction t, BrokerQueue queue, PublishFrame frame, long payloadBytes) {
        try {
            int count = frame.messageCount();
            if (!t.takesOperations()) {
                t.link.publishCredit(count, payloadBytes);
                if (t.state == Transaction.State.COMMITTING) {
                    t.link.answerError(0, ErrorCode.UNKNOWN_TRANSACTION, t.describe() + " is committing; a TX_PUBLISH after "
                            + "its TX_COMMIT is not part of it and was not stored");
                }
                return;
            }
            int[] sizes = new int[count];
            long bytes = 0;
            PublishCursor cursor = frame.cursor();
            for (int i = 0; cursor.next(); i++) {
                sizes[i] = cursor.headersLength() + cursor.payloadLength();
                bytes += sizes[i];
            }
            String over = overCaps(t, count, bytes);
            if (over != null) {
                t.link.publishCredit(count, payloadBytes);
                abort(t, ErrorCode.TRANSACTION_LIMIT, over);
                return;
            }
            Transaction.Staged staged = t.staged.computeIfAbsent(queue, Transaction.Staged::new);
            cursor = frame.cursor();
            ByteBuffer source = null;
            try {
                while (cursor.next()) {
                    if (source == null) {
                        source = cursor.nioBuffer();
                    }
                    staged.add(log.stage(t.number, source, cursor.headersOffset(), cursor.headersLength(),
                            cursor.payloadOffset(), cursor.payloadLength()));
                }
            } catch (RuntimeException e) {
                t.link.publishCredit(count, payloadBytes);
                abort(t, ErrorCode.TRANSACTION_ABORTED, refused("TX_PUBLISH to queue '" + queue.name() + "'", ErrorCodes.of(e),
                        "the transaction log could not stage it: " + message(e)));
                return;
            }
            t.messages += count;
            t.bytes += bytes;
            t.link.publishCredit(count, payloadBytes);
            long reservedBytes = bytes;
            t.pending.add(queue.transactions().stage(sizes).whenCompleteAsync((ok, refused) -> {
                if (refused != null) {
                    abort(t, ErrorCode.TRANSACTION_ABORTED, refused("TX_PUBLISH to queue '" + queue.name() + "'",
                            ErrorCodes.of(refused), message(refused)));
                } else if (t.sealed || t.state == Transaction.State.ABORTED || t.state == Transaction.State.FINISHED) {
                    queue.transactions().unstage(count, reservedBytes);
                } else {
                    staged.reservedMessages += count;
                    staged.reservedBytes += reservedBytes;
                }
            }, executor));
        } finally {
            frame.release();
        }
    }

    /** TX_ACK: the queue took these deliveries off their consumer and holds them (T1); the transaction keeps them. */
    void held(Transaction t, HeldAcks acks) {
        if (t.sealed || t.state == Transaction.State.ABORTED || t.state == Transaction.State.FINISHED) {
            acks.queue().transactions().release(acks);
            return;
        }
        t.held.computeIfAbsent(acks.queue(), q -> new ArrayList<>()).add(acks);
        t.messages += acks.count();
        if (acks.problem() != null) {
            abort(t, ErrorCode.TRANSACTION_ABORTED, refused("TX_ACK", ErrorCode.UNKNOWN_MESSAGE_ID, acks.problem()));
        } else if (t.messages > limits.maxMessages) {
            abort(t, ErrorCode.TRANSACTION_LIMIT, t.describe() + " would hold " + t.messages + " messages, over "
                    + "transactions.max-messages " + limits.maxMessages);
        }
    }

    private String overCaps(Transaction t, int messages, long bytes) {
        if (t.messages + messages > limits.maxMessages) {
            return t.describe() + " would have " + (t.messages + messages) + " messages, over transactions.max-messages "
                    + limits.maxMessages;
        }
        if (t.bytes + bytes > limits.maxBytes) {
            return t.describe() + " would publish " + (t.bytes + bytes) + " bytes, over transactions.max-bytes " + limits.maxBytes;
        }
        return null;
    }

    /** A refusal of the broker's own: rolled back now, the client told with TX_ABORTED; a later TX_COMMIT gets the reason. */
    void abort(Transaction t, ErrorCode code, String reason) {
        // A commit whose record is built is past rolling back: only an operation it still waits for may abort it.
        if (!t.takesOperations() && (t.state != Transaction.State.COMMITTING || t.sealed)) {
            return;
        }
        boolean wasCommitting = t.state == Transaction.State.COMMITTING;
        t.state = Transaction.State.ABORTED;
        t.abortCode = code;
        t.abortReason = reason;
        aborts++;
        undo(t);
        if (!wasCommitting) { // a commit waiting for its operations answers with the reason itself
            t.link.transactionAborted(t.clientId, code, reason);
        }
        LOG.debug("{} rolled back by the broker: {}", t.describe(), reason);
    }

    void commit(Transaction t, long requestId) {
        if (t.state == Transaction.State.ABORTED) {
            answerAborted(t, requestId);
            return;
        }
        if (t.state != Transaction.State.OPEN) {
            t.link.answerError(requestId, ErrorCode.UNKNOWN_TRANSACTION, t.describe() + " is " + (t.state
                    == Transaction.State.COMMITTING ? "already committing" : "finished"));
            return;
        }
        t.state = Transaction.State.COMMITTING;
        t.commitRequestId = requestId;
        t.timeout.cancel(false);
        CompletableFuture.allOf(t.pending.toArray(CompletableFuture[]::new))
                .whenCompleteAsync((done, failed) -> writeCommit(t), executor);
    }

    private void answerAborted(Transaction t, long requestId) {
        ErrorCode code = t.abortCode == ErrorCode.TRANSACTION_TIMED_OUT ? ErrorCode.TRANSACTION_TIMED_OUT : ErrorCode.TRANSACTION_ABORTED;
        t.link.answerError(requestId, code, t.describe() + " was rolled back: " + t.abortReason
                + (t.abortCode != code ? " (" + t.abortCode + ")" : ""));
        t.state = Transaction.State.FINISHED;
        forget(t);
    }

    /** Every staging and hold of the transaction is in: the commit record goes into the log. */
    private void writeCommit(Transaction t) {
        if (t.state == Transaction.State.ABORTED) {
            answerAborted(t, t.commitRequestId);
            return;
        }
        t.sealed = true;
        List<CommitRecord.Part> targets = new ArrayList<>();
        t.staged.forEach((q, s) -> targets.add(new CommitRecord.Part(q.name(), s.records())));
        List<CommitRecord.Part> sources = new ArrayList<>();
        t.held.forEach((q, list) -> {
            List<Long> ids = new ArrayList<>();
            for (HeldAcks h : list) {
                for (int i = 0; i < h.count(); i++) {
                    ids.add(h.id(i));
                }
            }
            sources.add(new CommitRecord.Part(q.name(), ids.stream().mapToLong(Long::longValue).toArray()));
        });
        CommitRecord record = new CommitRecord(nextApplySequence, targets, sources);
        if (targets.isEmpty() && sources.isEmpty()) {
            finishCommitted(t); // nothing to make durable
            return;
        }
        if (record.encodedLength() > log.maxRecordBytes()) {
            refuseCommit(t, ErrorCode.TRANSACTION_LIMIT, "its commit record would take " + record.encodedLength()
                    + " bytes, over the transaction log's " + log.maxRecordBytes() + " (too many queues or messages)");
            return;
        }
        CrashPoint.reached(CrashPoint.BEFORE_COMMIT_RECORD);
        try {
            t.commitRecordId = log.commit(t.number, record);
        } catch (RuntimeException e) {
            refuseCommit(t, ErrorCodes.of(e), "the transaction log refused its commit record: " + message(e));
            return;
        }
        nextApplySequence += record.publishCount();
        t.record = record;
        committing.add(t);
        log.whenDurable(t.commitRecordId).whenCompleteAsync((id, failed) -> {
            if (failed != null) {
                inDoubt(t, failed);
            } else {
                t.durable = true;
            }
            applyDurableCommits();
        }, executor);
    }

    private void refuseCommit(Transaction t, ErrorCode code, String why) {
        t.state = Transaction.State.FINISHED;
        undo(t);
        rollbacks++;
        t.link.answerError(t.commitRequestId, code == ErrorCode.INTERNAL_ERROR ? ErrorCode.TRANSACTION_ABORTED : code,
                t.describe() + " was rolled back: " + why);
        forget(t);
    }

    /**
     * The log could not force the commit record: it may or may not be on disk, and the log is failed
     * until a restart, which decides (X3). The held deliveries stay held until then.
     */
    private void inDoubt(Transaction t, Throwable failed) {
        committing.remove(t);
        t.state = Transaction.State.FINISHED;
        LOG.error("{}: its commit record could not be made durable ({}); whether it is committed is decided at the next start.",
                t.describe(), failed.toString());
        t.link.answerError(t.commitRequestId, ErrorCode.STORAGE_FAILED, t.describe() + " could not be made durable ("
                + message(failed) + "); whether it is committed is decided when the broker restarts");
        forget(t);
    }

    /** Applies the commits whose records are durable, in log order (X2). */
    private void applyDurableCommits() {
        while (!committing.isEmpty() && committing.peek().durable) {
            CrashPoint.reached(CrashPoint.AFTER_COMMIT_RECORD);
            Transaction t = committing.poll();
            applyCommit(t.record, true, t, t.logRecords()).whenComplete((x, e) -> { });
            // The answer does not wait for durability in the queues: the commit is durable in the log (X1).
        }
    }

    /**
     * Applies a commit: its publishes to their queues (in order behind the applies before, X2), its
     * acknowledgements to theirs. {@code t} is the live transaction (null in recovery): it is answered
     * once every part was tried. Its log records are acknowledged once all of it is durable (X3).
     * Completes when every part was tried.
     */
    private CompletableFuture<Void> applyCommit(CommitRecord record, boolean reserved, Transaction t, long[] logRecords) {
        List<CompletableFuture<?>> tried = new ArrayList<>();
        List<CompletableFuture<?>> durable = new ArrayList<>();
        long sequence = record.applyBase();
        // A live commit applies to the queues it staged in (their reservations); recovery finds them by name.
        List<BrokerQueue> stagedIn = t == null ? null : new ArrayList<>(t.staged.keySet());
        for (int i = 0; i < record.targets().size(); i++) {
            CommitRecord.Part target = record.targets().get(i);
            BrokerQueue q = stagedIn != null ? stagedIn.get(i) : queues.get(target.queue()); // deleted since: apply refuses
            List<QueueTransactions.Committed> publishes = new ArrayList<>(target.ids().length);
            for (long id : target.ids()) {
                StoredMessage m = log.read(id);
                if (m != null) {
                    publishes.add(new QueueTransactions.Committed(sequence, m.headersBytes(), m.payloadBytes()));
                }
                sequence++;
            }
            if (q == null) {
                LOG.warn("A committed transaction published {} messages to queue '{}', which was deleted before they were applied.",
                        publishes.size(), target.queue());
                continue;
            }
            ApplyJob job = new ApplyJob(q, publishes, reserved);
            submit(job);
            tried.add(job.tried);
            durable.add(job.done.thenCompose(last -> last < 0 ? CompletableFuture.completedFuture(null) : q.transactions().whenDurable(last)));
        }
        for (CommitRecord.Part source : record.sources()) {
            BrokerQueue q = queues.get(source.queue());
            if (q == null) {
                continue;
            }
            CompletableFuture<?> acked;
            if (t != null) {
                List<CompletableFuture<Void>> parts = new ArrayList<>();
                for (HeldAcks h : t.held.getOrDefault(q, List.of())) {
                    parts.add(q.transactions().commitHeld(h));
                }
                acked = CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new));
            } else {
                acked = q.transactions().ackRecovered(source.ids());
            }
            tried.add(acked);
            durable.add(acked.thenCompose(x -> q.transactions().whenAcksDurable()));
        }
        CompletableFuture<Void> allTried = CompletableFuture.allOf(tried.toArray(CompletableFuture[]::new));
        allTried.whenCompleteAsync((x, failed) -> {
            if (t != null) {
                finishCommitted(t);
            }
        }, executor);
        CompletableFuture.allOf(durable.toArray(CompletableFuture[]::new)).whenCompleteAsync((x, failed) -> {
            if (failed == null) {
                CrashPoint.reached(t == null ? CrashPoint.RECOVERY_BEFORE_FINISH : CrashPoint.BEFORE_FINISH);
                log.finished(logRecords);
            } else {
                LOG.warn("A committed transaction's effects could not all be made durable ({}); the next start applies it again.",
                        failed.toString());
            }
        }, executor);
        return allTried.exceptionally(e -> null);
    }

    private void finishCommitted(Transaction t) {
        t.state = Transaction.State.FINISHED;
        commits++;
        t.link.answerOk(t.commitRequestId);
        forget(t);
    }

    void rollback(Transaction t, long requestId) {
        if (t.state == Transaction.State.COMMITTING) {
            t.link.answerError(requestId, ErrorCode.UNKNOWN_TRANSACTION, t.describe() + " is committing; it can no longer be rolled back");
            return;
        }
        CompletableFuture<Void> undone = CompletableFuture.completedFuture(null);
        if (t.state == Transaction.State.OPEN) {
            rollbacks++;
            undone = undo(t);
        }
        t.state = Transaction.State.FINISHED;
        forget(t);
        undone.whenComplete((x, e) -> t.link.answerOk(requestId)); // once what it held is back in its queues
    }

    /** The connection closed: its open transactions are rolled back; a commit under way completes. */
    void connectionClosed(Transaction t) {
        if (t.state == Transaction.State.OPEN) {
            rollbacks++;
            undo(t);
        }
        if (t.state != Transaction.State.COMMITTING) {
            t.state = Transaction.State.FINISHED;
            forget(t);
        }
    }

    /**
     * Rolls back the transaction's effects: reservations go, held deliveries return to their queues,
     * staged records are finished. Completes once the queues have done so.
     */
    private CompletableFuture<Void> undo(Transaction t) {
        List<CompletableFuture<Void>> steps = new ArrayList<>();
        if (t.timeout != null) {
            t.timeout.cancel(false);
        }
        t.sealed = true;
        for (Transaction.Staged s : t.staged.values()) {
            if (s.reservedMessages > 0) {
                steps.add(s.queue.transactions().unstage(s.reservedMessages, s.reservedBytes));
                s.reservedMessages = 0;
                s.reservedBytes = 0;
            }
            log.finished(s.records());
        }
        t.staged.clear();
        for (List<HeldAcks> list : t.held.values()) {
            for (HeldAcks h : list) {
                steps.add(h.queue().transactions().release(h));
            }
        }
        t.held.clear();
        live.remove(t);
        return CompletableFuture.allOf(steps.toArray(CompletableFuture[]::new));
    }

    private void forget(Transaction t) {
        live.remove(t);
        t.link.flush();
        t.owner.forget(t);
    }

    // ------------------------------------------------------------------ applying in order (X2)

    /** The publishes of one commit to one queue. */
    private static final class ApplyJob {
        final BrokerQueue queue;
        final List<QueueTransactions.Committed> publishes;
        final boolean reserved;
        /** Completed after the first attempt, whatever its outcome. */
        final CompletableFuture<Void> tried = new CompletableFuture<>();
        /** Completed with the last id appended (-1: none) once an attempt succeeded. */
        final CompletableFuture<Long> done = new CompletableFuture<>();

        ApplyJob(BrokerQueue queue, List<QueueTransactions.Committed> publishes, boolean reserved) {
            this.queue = queue;
            this.publishes = publishes;
            this.reserved = reserved;
        }
    }

    private void submit(ApplyJob job) {
        ArrayDeque<ApplyJob> line = applying.computeIfAbsent(job.queue, q -> new ArrayDeque<>());
        line.add(job);
        if (line.size() == 1) {
            run(job);
        }
    }

    private void run(ApplyJob job) {
        job.queue.transactions().apply(job.publishes, job.reserved).whenCompleteAsync((last, failed) -> {
            job.tried.complete(null);
            if (failed != null && ErrorCodes.of(failed) != ErrorCode.UNKNOWN_QUEUE) {
                applyFailures++;
                LOG.warn("Queue '{}': committed transactional publishes could not be stored ({}); retrying in {} ms.",
                        job.queue.name(), message(failed), APPLY_RETRY_MS);
                executor.schedule(() -> run(job), APPLY_RETRY_MS, TimeUnit.MILLISECONDS);
                return;
            }
            CrashPoint.reached(CrashPoint.AFTER_A_QUEUE_APPLIED);
            job.done.complete(failed == null ? last : -1L);
            ArrayDeque<ApplyJob> line = applying.get(job.queue);
            line.poll();
            if (line.isEmpty()) {
                applying.remove(job.queue);
            } else {
                run(line.peek());
            }
        }, executor);
    }

    /** The sentence of a TRANSACTION_ABORTED for an operation refused with {@code code}. */
    static String refused(String operation, ErrorCode code, String why) {
        return operation + " was refused (" + code + "): " + why;
    }

    private static String message(Throwable e) {
        Throwable cause = ErrorCodes.unwrap(e);
        return cause.getMessage() == null ? cause.toString() : cause.getMessage();
    }

    // ------------------------------------------------------------------ figures

    /** Transactions open or committing now. */
    public int open() {
        return live.size();
    }

    /** Age of the oldest transaction open or committing, in seconds; 0 if none. */
    public double oldestAgeSeconds() {
        long now = System.nanoTime();
        long oldest = 0;
        for (Transaction t : live) {
            oldest = Math.max(oldest, now - t.startedNanos);
        }
        return oldest / 1e9;
    }

    public long commits() {
        return commits;
    }

    /** Rolled back by the client or by its connection closing. */
    public long rollbacks() {
        return rollbacks;
    }

    public long timeouts() {
        return timeouts;
    }

    /** Rolled back by the broker: a timeout, a refused operation, a cap. */
    public long aborts() {
        return aborts;
    }

    /** Records of the log still needed (X3): staged publishes of open transactions, commits not yet durable in their queues. */
    public long logRecords() {
        return log.records();
    }

    /** Attempts to store committed publishes that failed (each is retried). */
    public long applyFailures() {
        return applyFailures;
    }

    /**
     * At shutdown, once the connections are closed and before the queues' executors stop: runs what
     * the closed connections handed over (their rollbacks), so that it reaches the queues while they
     * still take work. Waits up to {@code timeoutMs}.
     */
    public void drain(long timeoutMs) {
        executor.submit(() -> null).awaitUninterruptibly(timeoutMs, TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() {
        executor.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        log.close();
    }
}
