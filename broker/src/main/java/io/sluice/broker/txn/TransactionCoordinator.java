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
import io.sluice.broker.queue.Replication;
import io.sluice.protocol.ErrorCode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Local transactions, broker-wide (docs/transactions.md): has what transactions publish staged in
 * their target queues, pending there ({@link QueueTransactions}), holds what they acknowledge in
 * their queues, commits each with one record (in its one target queue, T5, else in the
 * {@link TransactionLog}), applies the commit to the
 * queues, and rolls back what is not committed: on TX_ROLLBACK, a closed connection, a timeout, a
 * refused operation, and at a start for what a crash interrupted before the commit record was durable.
 *
 * <p>Rules:
 * <ul>
 *   <li>X1 A commit record is never durable before the messages it names: in the log it is written
 *       only once every one is durable in its queue; in their one target queue (T5 of
 *       {@link QueueTransactions}) it is appended after them, and a queue's durable part is a prefix.
 *       Nothing a transaction publishes becomes visible before its commit record is durable. OK to
 *       TX_COMMIT goes out once the record is durable and the commit was applied in every queue.</li>
 *   <li>X2 Commits are applied in the order their records were written, each once durable: those in the log in the
 *       log's order, on this thread; those kept in a queue (T5) in that queue's order, from where the queue reports
 *       them durable (rule "applied where durable" of {@link #writeCommitInQueue}). Two commits never share a staged
 *       message or a held delivery, so nothing orders a log's commits against a queue's. Applying one is in memory
 *       only (its staged messages become visible, its held deliveries are acknowledged), since the
 *       messages are stored already.</li>
 *   <li>X3 A commit record is finished (acknowledged in the log) only once nothing depends on it:
 *       the acknowledgements it applied are durable, and every message it staged is acknowledged in
 *       its queue with that durable too ({@link CommitFinisher}). Until then a restart needs it to
 *       tell its staged messages from an uncommitted transaction's (X4).</li>
 *   <li>X4 At a start, a staged message whose transaction has no commit record (in the log, or in its
 *       target queue: T5 of {@link QueueTransactions}) is discarded, and each commit record's
 *       acknowledgements are applied again, before any client is served. Transaction numbers are never
 *       reused: the next is above every one still stored (a commit record's, a staged message's committed or not),
 *       whatever the clock says ({@link TransactionRecovery}).</li>
 *   <li>X5 A queue that keeps commit records (T5) has its files deleted only once the acknowledgements
 *       those commits applied in other queues are durable (waiting at most
 *       {@value QueueCommitRecords#DELETE_WAIT_MS} ms, {@link QueueCommitRecords}): the record going with
 *       its queue must not take a committed transaction's acknowledgements with it.</li>
 *   <li>X6 A commit record names each queue by its name and its incarnation ({@link CommitRecord.Part}): recovery
 *       applies a part only to that incarnation, never to a queue declared again under the name since, which numbers
 *       its messages from the start ({@link TransactionRecovery}).</li>
 * </ul>
 *
 * <p>On a cluster node (docs/replication.md, rule R13) nothing is staged and no commit record written: a transaction's
 * messages are collected in memory and its commit is one replicated entry ({@link ReplicatedCommits}); holds, caps,
 * timeouts and rollbacks are the same.
 *
 * <p>Threads: one thread, {@code sluice-transactions}, owns every transaction and the log. A
 * connection's loop hands it work through {@link ConnectionTransactions}, and hands a TX_PUBLISH's
 * frame straight to the target queue's executor; queues' work comes back here.
 */
public final class TransactionCoordinator implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TransactionCoordinator.class);
    private static final long[] NO_IDS = new long[0];

    private final EventExecutor executor = new DefaultEventExecutor(new DefaultThreadFactory("sluice-transactions", true));
    private final TransactionLog log;
    private final QueueManager queues;
    private final CommitFinisher finisher;
    final BrokerConfig.Transactions limits;
    /**
     * The next transaction number; any thread (connections take one at TX_BEGIN). Starts at the clock, so that numbers
     * grow across runs without a record of their own, and is raised at recovery past every number still stored (X4).
     */
    private final AtomicLong nextNumber;
    /** Coordinator thread: commits written and waiting for durability, in log order (X2). */
    private final ArrayDeque<Transaction> committing = new ArrayDeque<>();
    /** Open and committing transactions, for the metrics; written on the coordinator thread. */
    private final Set<Transaction> live = ConcurrentHashMap.newKeySet();
    private final TransactionCounts counts = new TransactionCounts();
    /** Commit records kept in their target queue (T5): the metric's count, and what a queue's delete waits for (X5). */
    private final QueueCommitRecords inQueues = new QueueCommitRecords(executor);
    /** What becomes of a commit's record once it is applied (X3, X5). */
    private final CommitRecordFinishing records;
    /**
     * Rule "finishing rides along": work for this thread that no commit waits for (what follows a commit's apply, and
     * a commit record's finish once acknowledgements are durable) is queued here from any thread without waking it,
     * and run at this thread's next turn: a commit, a durable commit record, or the finisher's sweep, at most
     * {@value CommitFinisher#SWEEP_MS} ms away.
     */
    private final Queue<Runnable> deferred = new ConcurrentLinkedQueue<>();

    private TransactionCoordinator(TransactionLog log, QueueManager queues, BrokerConfig.Transactions limits) {
        this.log = log;
        this.queues = queues;
        this.limits = limits;
        this.finisher = new CommitFinisher(executor, deferred::add, this::runDeferred);
        this.records = new CommitRecordFinishing(log, finisher, inQueues, deferred::add);
        this.nextNumber = new AtomicLong(System.currentTimeMillis() << 16);
    }

    /**
     * Recovers the transactions in {@code log} (X4, opened by {@link TransactionLog#open}): the staged messages of a
     * transaction without a commit record are discarded, and a commit's acknowledgements applied again. Returns once
     * that is done, before any client is served. The coordinator owns the log from here, and closes it if recovery fails.
     */
    public static TransactionCoordinator open(TransactionLog log, QueueManager queues, BrokerConfig.Transactions limits) {
        TransactionCoordinator coordinator = new TransactionCoordinator(log, queues, limits);
        queues.beforeFilesDeleted(coordinator.inQueues::awaitSettled);
        try {
            TransactionRecovery recovery = new TransactionRecovery(log, queues, coordinator.inQueues, coordinator.records,
                    coordinator.nextNumber, coordinator.executor);
            CompletableFuture.supplyAsync(recovery::recover, coordinator.executor).thenCompose(done -> done).join();
            coordinator.executor.execute(coordinator.finisher::start);
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

    /** True on a cluster node, whose transactions commit as one replicated entry (R13, {@link ReplicatedCommits}). */
    boolean replicated() {
        return queues.replication() != null;
    }

    long newNumber() {
        return nextNumber.getAndIncrement();
    }

    // ------------------------------------------------------------------ operations (coordinator thread)

    /**
     * TX_BEGIN, on the connection's loop (no turn of this thread): the transaction counts as open, and its timeout
     * is kept on that loop, which hands the rollback to this thread when it fires. Cancelling it from here later
     * does not wake the loop (Netty removes a cancelled task from another thread lazily).
     */
    void begin(Transaction t, long timeoutMs) {
        live.add(t);
        t.timeout = t.link.loop().schedule(() -> executor.execute(() -> {
            if (t.takesOperations()) {
                counts.timedOut();
                abort(t, ErrorCode.TRANSACTION_TIMED_OUT, t.describe() + " was open longer than its timeout of "
                        + timeoutMs + " ms and was rolled back");
            }
        }), timeoutMs, TimeUnit.MILLISECONDS);
    }

    /**
     * TX_PUBLISH, on the connection's loop: the queue stages the frame's messages ({@code staging}, under way on
     * its executor). Part of the transaction unless it is rolled back by then ({@link #staged} looks; one after its
     * TX_COMMIT never gets here, rule "refused before stored" of {@link ConnectionTransactions}): a commit that
     * follows waits for it, and this thread takes the result in when it needs it (rule "taken in when needed" of
     * {@code Transaction.started}): at once only if the queue refused a message, the transaction went over a cap, or
     * it was rolled back meanwhile ({@code Transaction.undone}).
     */
    void staging(Transaction t, BrokerQueue queue, CompletableFuture<QueueTransactions.Staging> staging) {
        t.started.add(new Transaction.Operation(staging, s -> staged(t, queue, (QueueTransactions.Staging) s)));
        counts.operationStarted();
        staging.whenComplete((s, failed) -> { // on the queue's executor
            if (failed != null || t.undone || s.refusal() != null
                    || t.countOver(s.count(), limits.maxMessages)) {
                executor.execute(t::takeInDone);
            }
        });
    }

    /**
     * TX_ACK, on the connection's loop: the queue takes the deliveries off their consumer ({@code hold}, under way on
     * its executor). As {@link #staging}: taken in when needed, at once only for a problem or a cap. One that comes
     * after the TX_COMMIT never gets here ({@link ConnectionTransactions#ack}).
     */
    void holding(Transaction t, CompletableFuture<HeldAcks> hold) {
        t.started.add(new Transaction.Operation(hold, h -> held(t, (HeldAcks) h)));
        counts.operationStarted();
        hold.whenComplete((h, failed) -> { // on the queue's executor
            if (failed != null || t.undone || h.problem() != null || t.countOver(h.count(), limits.maxMessages)) {
                executor.execute(t::takeInDone);
            }
        });
    }

    /**
     * Returns the discard of what {@code s} staged if it is no part of {@code t} (any more), else null. The frame's
     * publish window is the queue's to give back (its flow control paces it), not this.
     */
    private CompletableFuture<Void> staged(Transaction t, BrokerQueue queue, QueueTransactions.Staging s) {
        if (t.sealed || t.state == Transaction.State.ABORTED || t.state == Transaction.State.FINISHED) {
            return queue.transactions().discard(s);
        }
        t.staged.computeIfAbsent(queue, Transaction.Staged::new).add(s); // a rollback discards them
        t.messages += s.count();
        String over = overMaxMessages(t);
        if (s.refusal() != null) {
            abort(t, ErrorCode.TRANSACTION_ABORTED, refused("TX_PUBLISH to queue '" + queue.name() + "'", s.refusalCode(), s.refusal()));
        } else if (over != null) {
            abort(t, ErrorCode.TRANSACTION_LIMIT, over);
        }
        return null;
    }

    /**
     * TX_PUBLISH on a cluster node, on the connection's loop: the messages, copied, are checked by the queue's quota
     * ({@code admitted}, under way on its executor), and this thread takes the result once it is there. Part of the
     * transaction unless it is rolled back by then, as {@link #staging}: a commit that follows waits for it (R13).
     */
    void collecting(Transaction t, CompletableFuture<ReplicatedCommits.Messages> admitted) {
        CompletableFuture<Void> done = admitted.thenAcceptAsync(m -> collected(t, m), executor);
        t.started.add(new Transaction.Operation(done, x -> null)); // taken in as it completes, on this thread
        counts.operationStarted();
    }

    private void collected(Transaction t, ReplicatedCommits.Messages m) {
        if (t.sealed || t.state == Transaction.State.ABORTED || t.state == Transaction.State.FINISHED) {
            ReplicatedCommits.ended(m);
            return;
        }
        if (m.refusal() != null) { // nothing of it is counted anywhere
            abort(t, ErrorCode.TRANSACTION_ABORTED, refused("TX_PUBLISH to queue '" + m.queue().name() + "'",
                    ErrorCode.QUEUE_BLOCKED, m.refusal()));
            return;
        }
        t.collected.computeIfAbsent(m.queue(), q -> new ArrayList<>()).add(m);
        t.messages += m.count();
        String over = overMaxMessages(t);
        if (over != null) {
            abort(t, ErrorCode.TRANSACTION_LIMIT, over);
        }
    }

    /** R9, R13: the transaction's collected messages no longer count as uncommitted in their queues (stored now, or never). */
    private static void collectedEnded(Transaction t) {
        t.collected.values().forEach(list -> list.forEach(ReplicatedCommits::ended));
        t.collected.clear();
    }

    /** Rule R9's bound on a cluster node, which a transaction's messages count toward until it ends; 0 on a single broker. */
    long maxUncommittedBytes() {
        Replication replication = queues.replication();
        return replication == null ? 0 : replication.maxUncommittedBytes();
    }

    /**
     * R13: the transaction's whole effect goes into one replicated entry. OK once it is applied here; refused before the
     * log (too large, the entry level), rolled back; not committed while this node waited, unknown: not answered (the
     * connection is closed with NOT_LEADER, rule S1) and what it held given back, acknowledged if the entry commits after all.
     */
    private void commitReplicated(Transaction t) {
        if (t.collected.isEmpty() && t.held.isEmpty()) {
            finishCommitted(t); // nothing to replicate
            return;
        }
        List<Replication.TransactionPart> parts = ReplicatedCommits.parts(t);
        if (parts.isEmpty()) { // every queue it touched was deleted since: what it did there went with them
            collectedEnded(t);
            finishCommitted(t);
            return;
        }
        queues.replication().commitTransaction(t.number, parts).whenCompleteAsync((x, failed) -> {
            if (failed == null) {
                collectedEnded(t); // stored now: the store counts them
                finishCommitted(t);
            } else if (ReplicatedCommits.notSubmitted(failed)) {
                refuseCommit(t, ErrorCodes.of(failed), message(failed));
            } else if (ReplicatedCommits.outcomeUnknown(failed)) {
                ReplicatedCommits.logUnknown(t, failed);
                t.state = Transaction.State.FINISHED;
                undo(t);
                forget(t);
            } else { // committed in the log, applied on every node; this one could not make its messages durable
                LOG.error("{}: committed, but this node could not store its messages ({}).", t.describe(), failed.toString());
                collectedEnded(t);
                t.state = Transaction.State.FINISHED;
                forget(t);
                t.link.answerError(t.commitRequestId, ErrorCode.STORAGE_FAILED, t.describe() + " is committed in the "
                        + "replicated log, but this node could not make its messages durable: " + message(failed));
            }
        }, executor);
    }

    /** TX_ACK: the queue took these deliveries off their consumer and holds them (T1); the transaction keeps them. */
    /** Returns the release of what {@code acks} holds if it is no part of {@code t} (any more), else null. */
    CompletableFuture<Void> held(Transaction t, HeldAcks acks) {
        if (t.sealed || t.state == Transaction.State.ABORTED || t.state == Transaction.State.FINISHED) {
            return acks.queue().transactions().release(acks);
        }
        t.held.computeIfAbsent(acks.queue(), q -> new ArrayList<>()).add(acks);
        t.messages += acks.count();
        String over = overMaxMessages(t);
        if (acks.problem() != null) {
            abort(t, ErrorCode.TRANSACTION_ABORTED, refused("TX_ACK", acks.problemCode(), acks.problem()));
        } else if (over != null) {
            abort(t, ErrorCode.TRANSACTION_LIMIT, over);
        }
        return null;
    }

    /**
     * Why {@code t}, with the messages it published and acknowledged so far, is over {@code transactions.max-messages},
     * or null. The one check of the acknowledged messages, which only their queues count. The loop checked what the
     * transaction publishes against both caps before its queues saw it (rule "caps before the queue" of
     * {@link ConnectionTransactions}), so only acknowledged messages can take it over here, and {@code max-bytes},
     * which only publishing adds to, is not checked here at all.
     */
    private String overMaxMessages(Transaction t) {
        if (t.messages <= limits.maxMessages) {
            return null;
        }
        return t.describe() + " would have " + t.messages + " messages published and acknowledged, over "
                + "transactions.max-messages " + limits.maxMessages;
    }

    /**
     * A refusal of the broker's own: rolled back now, the client told with TX_ABORTED; a later TX_COMMIT gets the reason.
     * Returns false if {@code t} was past rolling back (rolled back or ended already, or its commit record built).
     */
    boolean abort(Transaction t, ErrorCode code, String reason) {
        // A commit whose record is built is past rolling back: only an operation it still waits for may abort it.
        if (!t.takesOperations() && (t.state != Transaction.State.COMMITTING || t.sealed)) {
            return false;
        }
        boolean wasCommitting = t.state == Transaction.State.COMMITTING;
        t.state = Transaction.State.ABORTED;
        t.abortCode = code;
        t.abortReason = reason;
        counts.aborted();
        undo(t);
        if (!wasCommitting) { // a commit waiting for its operations answers with the reason itself
            t.link.transactionAborted(t.clientId, code, reason);
        }
        LOG.debug("{} rolled back by the broker: {}", t.describe(), reason);
        return true;
    }

    /** Coordinator thread: runs what was deferred to it (rule "finishing rides along"). */
    private void runDeferred() {
        for (Runnable work; (work = deferred.poll()) != null; ) {
            try {
                work.run();
            } catch (RuntimeException e) {
                LOG.warn("Finishing a commit failed ({}); its record stays until the next start applies it again.", e.toString());
            }
        }
    }

    void commit(Transaction t, long requestId) {
        runDeferred();
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
        t.pending.addAll(t.takeInAll(null, executor)); // a refusal among them aborts t: prepareCommit answers with it
        CompletableFuture<Void> operations = CompletableFuture.allOf(t.pending.toArray(CompletableFuture[]::new));
        if (operations.isDone()) {
            prepareCommit(t); // on this thread already: no further turn of it
        } else {
            operations.whenCompleteAsync((done, failed) -> prepareCommit(t), executor);
        }
    }

    private void answerAborted(Transaction t, long requestId) {
        ErrorCode code = t.abortAnswerCode();
        t.state = Transaction.State.FINISHED;
        forget(t);
        t.link.answerError(requestId, code, t.describe() + " was rolled back: " + t.abortReason
                + (t.abortCode != code ? " (" + t.abortCode + ")" : ""));
    }

    /**
     * Every staging and hold of the transaction is in: its commit record is built, and written where X1
     * allows: into its one target queue at once (T5), else into the log once its staged messages are durable.
     */
    private void prepareCommit(Transaction t) {
        if (t.state == Transaction.State.ABORTED) {
            answerAborted(t, t.commitRequestId);
            return;
        }
        t.sealed = true;
        if (replicated()) {
            commitReplicated(t);
            return;
        }
        List<CommitRecord.Part> targets = new ArrayList<>();
        List<BrokerQueue> targetQueues = new ArrayList<>();
        t.staged.forEach((q, s) -> {
            if (s.count > 0) {
                targets.add(new CommitRecord.Part(q, s.ids()));
                targetQueues.add(q);
            }
        });
        List<CommitRecord.Part> sources = new ArrayList<>();
        t.held.forEach((q, list) -> {
            int total = 0;
            for (HeldAcks h : list) {
                total += h.count();
            }
            if (total > 0) {
                long[] ids = new long[total];
                int n = 0;
                for (HeldAcks h : list) {
                    for (int i = 0; i < h.count(); i++) {
                        ids[n++] = h.id(i);
                    }
                }
                sources.add(new CommitRecord.Part(q, ids));
            }
        });
        if (targets.isEmpty() && sources.isEmpty()) {
            finishCommitted(t); // nothing to make durable
            return;
        }
        CommitRecord record = new CommitRecord(targets, sources);
        if (record.encodedLength() > log.maxRecordBytes()) {
            refuseCommit(t, ErrorCode.TRANSACTION_LIMIT, "its commit record would take " + record.encodedLength()
                    + " bytes, over the transaction log's " + log.maxRecordBytes() + " (too many queues or messages)");
            return;
        }
        if (targetQueues.size() == 1) {
            writeCommitInQueue(t, record, targetQueues.get(0));
        } else {
            writeCommitInLog(t, record, targetQueues);
        }
    }

    /**
     * T5: the commit record of a transaction that published to one queue goes into that queue, after
     * its staged messages, so one force of the queue makes both durable (X1 holds: the record cannot be
     * durable before the messages it names). A queue deleted meanwhile, or a record too large for it,
     * sends it to the log instead.
     *
     * <p>Rule "write, then wait, in the queue": the queue's executor, once it has written the record, asks for
     * its durability itself. The record is counted for X5 here, before it is written: a delete of the queue that
     * comes before the write finds it counted, and a queue writes the records it is given in that order.
     *
     * <p>Rule "applied where durable" (X2 for a record in a queue): once the record is durable the commit is applied
     * from where that is reported (the flusher, or the queue's executor if it already was), not after a turn of this
     * thread. The queue reports durability in record order, so its commits are applied in the order their records
     * were written; this thread hears of it only if the record was refused or could not be forced.
     */
    private void writeCommitInQueue(Transaction t, CommitRecord record, BrokerQueue target) {
        CrashPoint.reached(CrashPoint.BEFORE_COMMIT_RECORD);
        ByteBuffer encoded = record.encode();
        inQueues.written(target);
        t.commitRecordQueue = target;
        CompletableFuture<Long> written = target.transactions().writeCommitRecord(t.number, encoded);
        written.thenCompose(id -> id < 0 ? CompletableFuture.completedFuture(id) : target.transactions().whenCommitRecordDurable(id))
                .whenComplete((x, failed) -> {
                    if (failed == null && written.join() >= 0) { // durable: applied from here (rule "applied where durable")
                        t.commitRecordId = written.join();
                        t.durable = true;
                        CrashPoint.reached(CrashPoint.AFTER_COMMIT_RECORD);
                        apply(t);
                        return;
                    }
                    executor.execute(() -> {
                        if (written.isCompletedExceptionally() || written.join() < 0) {
                            t.commitRecordQueue = null; // never written: no longer a record here, nor one to wait for
                            inQueues.settled(target);
                            inQueues.finished();
                            if (written.isCompletedExceptionally()) {
                                refuseCommit(t, ErrorCodes.of(failed), "queue '" + target.name() + "' refused its commit record: "
                                        + message(failed));
                            } else {
                                writeCommitInLog(t, record, List.of(target));
                            }
                        } else {
                            t.commitRecordId = written.join();
                            committing.add(t); // not applied: inDoubt takes it out again
                            recordDurable(t, failed);
                        }
                    });
                });
    }

    /** X1: the commit record goes to the log once the messages it names are durable in their queues. */
    private void writeCommitInLog(Transaction t, CommitRecord record, List<BrokerQueue> targetQueues) {
        List<CompletableFuture<Long>> stagedDurable = new ArrayList<>();
        for (BrokerQueue q : targetQueues) {
            stagedDurable.add(q.transactions().whenStagedDurable(t.staged.get(q).lastId));
        }
        CompletableFuture.allOf(stagedDurable.toArray(CompletableFuture[]::new)).whenCompleteAsync((x, failed) -> {
            if (failed != null) {
                refuseCommit(t, ErrorCodes.of(failed), "its published messages could not be made durable in their queues: "
                        + message(failed));
            } else {
                writeCommit(t, record);
            }
        }, executor);
    }

    private void writeCommit(Transaction t, CommitRecord record) {
        CrashPoint.reached(CrashPoint.BEFORE_COMMIT_RECORD);
        try {
            t.commitRecordId = log.commit(t.number, record);
        } catch (RuntimeException e) {
            refuseCommit(t, ErrorCodes.of(e), "the transaction log refused its commit record: " + message(e));
            return;
        }
        awaitDurableCommit(t, log.whenDurable(t.commitRecordId));
    }

    /** The commit record is written: the transaction is committed once {@code durable} completes, and applied in write order (X2). */
    private void awaitDurableCommit(Transaction t, CompletableFuture<Long> durable) {
        committing.add(t);
        durable.whenCompleteAsync((id, failed) -> recordDurable(t, failed), executor);
    }

    /** The commit record of {@code t}, in {@link #committing}, is durable, or {@code failed} to be; then applies what is due (X2). */
    private void recordDurable(Transaction t, Throwable failed) {
        if (failed != null) {
            inDoubt(t, failed);
        } else {
            t.durable = true;
        }
        applyDurableCommits();
        runDeferred();
    }

    private void refuseCommit(Transaction t, ErrorCode code, String why) {
        t.state = Transaction.State.FINISHED;
        undo(t);
        counts.aborted(); // rolled back by the broker, not by its client or connection (docs/transactions.md, "Metrics")
        forget(t);
        t.link.answerError(t.commitRequestId, code == ErrorCode.INTERNAL_ERROR ? ErrorCode.TRANSACTION_ABORTED : code,
                t.describe() + " was rolled back: " + why);
    }

    /**
     * The log could not force the commit record: it may or may not be on disk, and the log is failed
     * until a restart, which decides (X4). Its staged messages stay pending and its held deliveries
     * held until then.
     */
    private void inDoubt(Transaction t, Throwable failed) {
        committing.remove(t);
        inQueues.settled(t.commitRecordQueue);
        t.state = Transaction.State.FINISHED;
        LOG.error("{}: its commit record could not be made durable ({}); whether it is committed is decided at the next start.",
                t.describe(), failed.toString());
        forget(t);
        t.link.answerError(t.commitRequestId, ErrorCode.STORAGE_FAILED, t.describe() + " could not be made durable ("
                + message(failed) + "); whether it is committed is decided when the broker restarts");
    }

    /** Applies the commits whose records are durable, in log order (X2). */
    private void applyDurableCommits() {
        while (!committing.isEmpty() && committing.peek().durable) {
            CrashPoint.reached(CrashPoint.AFTER_COMMIT_RECORD);
            apply(committing.poll());
        }
    }

    /**
     * Applies a durable commit (X2): one task per queue it touches, which makes its staged messages
     * there visible and acknowledges what it holds there. Answers OK once every part was applied;
     * then its record waits to be finished (X3).
     *
     * <p>Rule "answer from the last part": the OK goes out from the executor of the queue that applied the
     * commit's last part, not after a further turn of the coordinator's thread; the commit is counted and
     * forgotten by its connection first, so the client never sees its OK before its metrics or before it may
     * reuse the id. What is left (finishing the record) follows on the coordinator's thread.
     */
    private void apply(Transaction t) {
        Set<BrokerQueue> touched = new LinkedHashSet<>(t.staged.keySet());
        touched.addAll(t.held.keySet());
        List<CompletableFuture<Boolean>> parts = new ArrayList<>();
        for (BrokerQueue q : touched) {
            Transaction.Staged s = t.staged.get(q);
            CompletableFuture<Void> part = s == null
                    ? q.transactions().commit(NO_IDS, 0, 0, t.held.getOrDefault(q, List.of()))
                    : q.transactions().commit(s.ids, s.count, s.bytes, t.held.getOrDefault(q, List.of()));
            parts.add(part.handle((x, failed) -> { // on the queue's executor
                if (failed != null) {
                    counts.applyFailed();
                    LOG.warn("Queue '{}': a committed transaction's acknowledgements could not be stored ({}); the next start "
                            + "applies them again.", q.name(), message(failed));
                }
                CrashPoint.reached(CrashPoint.AFTER_A_QUEUE_APPLIED);
                return failed == null;
            }));
        }
        CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).whenComplete((x, never) -> answerCommitted(t))
                .whenCompleteAsync((x, never) -> { // no commit waits for this: rule "finishing rides along"
            t.state = Transaction.State.FINISHED;
            if (!parts.stream().allMatch(CompletableFuture::join)) { // its record stays: the next start applies it again
                inQueues.settled(t.commitRecordQueue);
            } else {
                List<CommitFinisher.Target> targets = new ArrayList<>();
                t.staged.forEach((q, s) -> {
                    if (s.count > 0) {
                        targets.add(new CommitFinisher.Target(q, s.ids(), s.lastId));
                    }
                });
                Runnable finishRecord = t.commitRecordQueue == null ? records.inLog(new long[] {t.commitRecordId})
                        : records.inQueue(t.commitRecordQueue, t.commitRecordId);
                records.finishOnceDurable(finishRecord, t.commitRecordQueue, new ArrayList<>(t.held.keySet()), targets);
            }
        }, deferred::add);
    }

    private void finishCommitted(Transaction t) {
        t.state = Transaction.State.FINISHED;
        answerCommitted(t);
    }

    /**
     * OK to the commit of {@code t}: counted, no longer open or committing, forgotten by its connection, then
     * answered. On the coordinator's thread, or where its last part was applied (rule "answer from the last part"
     * of {@link #apply}); everything it touches is thread-safe.
     */
    private void answerCommitted(Transaction t) {
        counts.committed();
        live.remove(t);
        t.owner.forget(t);
        t.link.answerOk(t.commitRequestId);
    }

    void rollback(Transaction t, long requestId) {
        if (t.state == Transaction.State.COMMITTING) {
            t.link.answerError(requestId, ErrorCode.UNKNOWN_TRANSACTION, t.describe() + " is committing; it can no longer be rolled back");
            return;
        }
        CompletableFuture<Void> undone = CompletableFuture.completedFuture(null);
        if (t.state == Transaction.State.OPEN) {
            counts.rolledBack();
            undone = undo(t);
        }
        t.state = Transaction.State.FINISHED;
        forget(t);
        undone.whenComplete((x, e) -> t.link.answerOk(requestId)); // once what it held is back in its queues
    }

    /**
     * The connection closed: its open transactions are rolled back. A transaction whose TX_COMMIT came is not handed
     * here ({@link ConnectionTransactions#close}): its commit completes wherever it is.
     */
    void connectionClosed(Transaction t) {
        if (t.state == Transaction.State.OPEN) {
            counts.rolledBack();
            undo(t);
        }
        t.state = Transaction.State.FINISHED;
        forget(t);
    }

    /**
     * Rolls back the transaction's effects: its staged messages are discarded, its held deliveries
     * return to their queues. Completes once the queues have done so.
     */
    private CompletableFuture<Void> undo(Transaction t) {
        List<CompletableFuture<Void>> steps = new ArrayList<>();
        if (t.timeout != null) {
            t.timeout.cancel(false);
        }
        t.sealed = true;
        t.undone = true; // before the take-in: one the loop adds after it sees this when it completes
        t.takeInAll(steps, executor); // sealed: what they staged is discarded and what they hold released, now or as they complete
        for (Transaction.Staged s : t.staged.values()) {
            steps.add(s.queue.transactions().discard(s.ids, s.count, s.bytes));
        }
        t.staged.clear();
        collectedEnded(t); // a cluster's: never stored
        for (List<HeldAcks> list : t.held.values()) {
            for (HeldAcks h : list) {
                steps.add(h.queue().transactions().release(h));
            }
        }
        t.held.clear();
        live.remove(t);
        return CompletableFuture.allOf(steps.toArray(CompletableFuture[]::new));
    }

    /** Rule "forgotten before answered": the client may reuse the id, or its place under the cap, once it hears. */
    private void forget(Transaction t) {
        live.remove(t);
        t.owner.forget(t);
        t.link.flush();
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

    /** What the transactions came to: commits, rollbacks, timeouts, aborts, apply failures, operations kept. */
    public TransactionCounts counts() {
        return counts;
    }

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

    /**
     * Commit records still needed (X3), in the log and in target queues (T5): commits whose
     * acknowledgements or staged messages are not yet all acknowledged and durable.
     */
    public long logRecords() {
        return log.records() + inQueues.unfinished();
    }

    /**
     * At shutdown, once the connections are closed and before the queues' executors stop: runs what
     * the closed connections handed over (their rollbacks), so that it reaches the queues while they
     * still take work. Waits up to {@code timeoutMs}.
     */
    public void drain(long timeoutMs) {
        executor.submit(() -> {
            runDeferred();
            return null;
        }).awaitUninterruptibly(timeoutMs, TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() {
        executor.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        log.close();
    }
}
