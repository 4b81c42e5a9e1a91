package io.sluice.client;

import io.netty.channel.Channel;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.client.internal.LoopBatcher;
import io.sluice.client.internal.OutgoingHeaders;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.Frame;
import io.sluice.protocol.FrameType;
import io.sluice.protocol.MessageHeader;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.TxAbortedFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxRollbackFrame;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A local transaction on one {@link Connection}: publishes to any queues and acknowledgements of messages
 * received by the connection's consumers, applied together by {@link #commit()} or not at all
 * (docs/protocol.md, "Transactions"). Made by {@link Connection#transaction()}, used once. Thread-safe.
 *
 * <p>Threads: each call hands its operation to the connection's network thread through a lock-free queue
 * drained in bursts; that thread owns every field below "owned by the network thread" and writes the frames,
 * in the order the calls were made. {@link #commit} and {@link #rollback} block their caller up to a
 * deadline (by default the connection's request timeout), and refuse to block on a network thread of the
 * client (a callback with {@link ConnectionOptions#callbacksOnNetworkThread()}): use the async forms there.
 * Their futures complete where callbacks run.
 *
 * <p>Frames are pipelined; only TX_COMMIT and TX_ROLLBACK wait for an answer:
 * <ul>
 *   <li>TX_BEGIN is written lazily, right before the transaction's first frame, so the broker's timeout
 *       runs from the moment the transaction holds something there. A transaction that never wrote a frame
 *       commits or rolls back with none.</li>
 *   <li>Publishes are batched per queue into TX_PUBLISH frames: one is written when a queue has
 *       {@value #MAX_BATCH_MESSAGES} messages or {@value #MAX_BATCH_BYTES} payload bytes waiting (the
 *       producer defaults), the rest before TX_COMMIT. They take from the connection's publish window as a
 *       producer's messages do and wait for PUBLISH_CREDIT when it is spent; the commit waits for them.
 *       A payload array must not change until the commit or rollback has completed.</li>
 *   <li>Acks are batched per consumer into TX_ACK ranges as that consumer batches its own
 *       ({@link ConsumerOptions#ackBatchSize()}, {@link ConsumerOptions#ackFlushDelay()}), so the broker soon
 *       holds the message for the transaction (its ack timeout stops); all are written before TX_COMMIT.
 *       Each TX_ACK counts as settled for the consumer's credit top-up, as its ACKs do. The acks of a consumer
 *       being closed ({@link Consumer#close()}) are written at once, ahead of its UNSUBSCRIBE; one that reaches the
 *       network thread after it fails the transaction.</li>
 * </ul>
 *
 * <p>Rule "fail, never replay": a TX_ABORTED for the transaction, the loss of its network connection, or a
 * message it cannot send (larger than a frame) fails it. Then the next {@link #publish} or {@link #ack}
 * throws the failure (a {@link SluiceException} with the broker's code and sentence, or a
 * {@link ConnectionLostException}), {@link #commit} fails with it, and {@link #rollback} and {@link #close}
 * succeed: the transaction is rolled back, by the broker (which rolls back what a closed connection left
 * open) or by the TX_ROLLBACK the client sends. After a TX_ABORTED the client sends TX_ROLLBACK too (unless
 * its TX_COMMIT is on the way), so that the broker forgets the transaction. The client never replays a
 * transaction after a reconnect.
 * Acks the transaction will no longer send are handed back to their queue with NACK REQUEUE, as are the
 * unwritten acks of a rollback. A commit whose answer does not come (the connection was lost, or the deadline
 * passed after TX_COMMIT was written) fails with {@link ConnectionLostException} or
 * {@link SluiceTimeoutException} saying that the outcome is unknown.
 */
public final class Transaction implements AutoCloseable {
    static final int MAX_BATCH_MESSAGES = 256;
    static final int MAX_BATCH_BYTES = 256 * 1024;
    private static final Logger LOG = LoggerFactory.getLogger(Transaction.class);
    /**
     * A blocking commit or rollback waits this much past its deadline for the network thread's verdict. That
     * thread always decides by the deadline (the request's timeout, the publish window's timer, a lost
     * connection), but on a loaded machine it may run late by more than a scheduling slice: the caller takes
     * its verdict ("may or may not have committed", "nothing was committed") rather than a guess of its own,
     * and gives up only on a network thread that is stuck.
     */
    private static final long VERDICT_GRACE_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** The longest commit or rollback deadline kept as asked ({@link #bounded}). */
    private static final Duration LONGEST_DEADLINE = Duration.ofNanos(Long.MAX_VALUE / 4);

    private enum Phase {
        /** No operation has reached the network thread. */
        UNBOUND,
        /** Bound to one network connection, taking operations. */
        OPEN,
        /** Committing: messages wait for the publish window before TX_COMMIT can go. */
        FLUSHING,
        /** TX_COMMIT or TX_ROLLBACK was written. */
        ANSWER_AWAITED,
        DONE
    }

    private final Connection connection;
    private final long txnId;
    private final LoopBatcher<Object> operations;
    /** Guards {@link #endedBy} together with submitting, so no operation follows the commit or rollback. */
    private final Object submitLock = new Object();
    /** Which of commit, rollback and close ended the transaction; null while it is open. */
    private String endedBy;
    /**
     * The queue of the latest {@link #publish}, measured: a transaction usually publishes to one queue, and
     * encoding its name for each message was an allocation per message. Any thread; the record is immutable.
     */
    private volatile QueueName lastQueue;
    /** Why the transaction failed; written on the network thread, read by callers. */
    private volatile SluiceException failure;

    // Owned by the network thread.
    private Phase phase = Phase.UNBOUND;
    private int session;
    /** What the transaction staged and not yet wrote, and the frames it writes. */
    private final TransactionBatches batches;
    /** The commit or rollback being carried out. */
    private Finish finishing;
    private ScheduledFuture<?> flushDeadline;

    Transaction(Connection connection, long txnId, int timeoutMs) {
        this.connection = connection;
        this.txnId = txnId;
        this.batches = new TransactionBatches(this, connection, txnId, timeoutMs);
        this.operations = new LoopBatcher<>(connection.loopExecutor(), new Operations());
    }

    /** The id naming this transaction on the wire, unique on its connection. */
    public long id() {
        return txnId;
    }

    /** Stages a message without headers for {@code queue}; see {@link #publish(String, byte[], List)}. */
    public void publish(String queue, byte[] payload) {
        publish(queue, payload, List.of());
    }

    /** Stages a message with string headers, UTF-8 encoded, in the map's iteration order. */
    public void publish(String queue, byte[] payload, Map<String, String> headers) {
        publish(queue, payload, OutgoingHeaders.of(headers));
    }

    /**
     * Stages a message for {@code queue}, stored and delivered only if the transaction commits. Does not
     * block; the payload array must not change until the commit or rollback has completed.
     *
     * @throws IllegalStateException the transaction was committed, rolled back or closed
     * @throws SluiceException       the transaction failed (see the class rule "fail, never replay")
     */
    public void publish(String queue, byte[] payload, List<MessageHeader> headers) {
        Objects.requireNonNull(queue, "queue");
        Objects.requireNonNull(payload, "payload");
        List<MessageHeader> copy = OutgoingHeaders.copyOf(Objects.requireNonNull(headers, "headers"));
        QueueName name = lastQueue;
        if (name == null || !name.queue().equals(queue)) {
            name = QueueName.of(queue);
            lastQueue = name;
        }
        TransactionBatches.Publish publish = new TransactionBatches.Publish(queue, name.utf8Bytes(), copy, payload,
                OutgoingHeaders.encodedMessageBytes(copy, payload));
        synchronized (submitLock) {
            checkUsable("publish");
            operations.submit(publish);
        }
    }

    /**
     * Acknowledges a message inside the transaction: the commit acknowledges it, a rollback returns it to its
     * queue. It counts as settled: {@link Message#ack()} or {@link Message#nack} may not follow.
     *
     * @throws IllegalArgumentException the message was received on another connection
     * @throws IllegalStateException    the message was already settled, its consumer was closed (its TX_ACK would
     *                                  follow the UNSUBSCRIBE) or its connection was, or it ended on its own, or the
     *                                  transaction has ended
     * @throws SluiceException          the transaction failed (see the class rule "fail, never replay")
     */
    public void ack(Message message) {
        Objects.requireNonNull(message, "message");
        if (message.consumer().connection() != connection) {
            throw new IllegalArgumentException("message " + message.id() + " was received on another connection;"
                    + " transaction " + txnId + " can acknowledge only messages of its own connection");
        }
        synchronized (submitLock) {
            checkUsable("ack");
            message.consumer().checkSettleable("ack in transaction " + txnId, message.id());
            message.markSettledInTransaction(txnId);
            operations.submit(message);
        }
    }

    /** {@link #commit(Duration)} with the connection's request timeout. */
    public void commit() {
        commit(connection.options().requestTimeout());
    }

    /**
     * Commits and waits for the broker's OK: the commit is durable and applied.
     *
     * @throws SluiceException        the broker refused or aborted it (nothing of it applied), or the
     *                                transaction had failed before
     * @throws SluiceTimeoutException no answer within {@code deadline}: committed or not, unknown (if the
     *                                messages were still waiting for the publish window, nothing was
     *                                committed and the transaction was rolled back; the message says which)
     * @throws ConnectionLostException the connection was lost: before TX_COMMIT, rolled back; after, unknown
     * @throws IllegalStateException  the transaction has ended, or this is a network thread of the client
     */
    public void commit(Duration deadline) {
        connection.checkMayBlock("Transaction.commit");
        awaitVerdict(end("commit", true, deadline), deadline, "commit");
    }

    /** Commits; the future completes when the broker answered OK (see {@link #commit(Duration)}). */
    public CompletableFuture<Void> commitAsync() {
        return end("commit", true, connection.options().requestTimeout());
    }

    /** {@link #rollback(Duration)} with the connection's request timeout. */
    public void rollback() {
        rollback(connection.options().requestTimeout());
    }

    /**
     * Rolls back: staged messages are dropped, acknowledged ones return to their queue. Returns at once for a
     * transaction that never reached the broker, or that already failed (it is rolled back).
     *
     * @throws SluiceTimeoutException no answer within {@code deadline} (the broker rolls the transaction
     *                                back at its timeout anyway)
     * @throws IllegalStateException  the transaction has ended, or this is a network thread of the client
     */
    public void rollback(Duration deadline) {
        connection.checkMayBlock("Transaction.rollback");
        awaitVerdict(end("rollback", false, deadline), deadline, "rollback");
    }

    public CompletableFuture<Void> rollbackAsync() {
        return end("rollback", false, connection.options().requestTimeout());
    }

    /**
     * Rolls back unless commit or rollback was called, waiting up to the request timeout (on a network
     * thread of the client, without waiting). Never throws: whatever fails here, the broker rolls the
     * transaction back (at its timeout, or when the connection closes).
     */
    @Override
    public void close() {
        CompletableFuture<Void> rolledBack;
        try {
            rolledBack = end("close", false, connection.options().requestTimeout());
        } catch (IllegalStateException ended) {
            return;
        }
        if (connection.onNetworkThread()) {
            return;
        }
        try {
            awaitVerdict(rolledBack, connection.options().requestTimeout(), "rollback at close");
        } catch (SluiceException e) {
            LOG.debug("Rolling back transaction {} at close did not finish: {}", txnId, e.getMessage());
        }
    }

    private void checkUsable(String operation) {
        if (endedBy != null) {
            throw new IllegalStateException("transaction " + txnId + " was ended by " + endedBy + "; " + operation
                    + " is no longer possible");
        }
        SluiceException failed = failure;
        if (failed != null) {
            throw failed;
        }
    }

    /** Ends the transaction by commit or rollback, once; the future completes on the network thread's verdict. */
    private CompletableFuture<Void> end(String operation, boolean commit, Duration asked) {
        if (asked.isNegative() || asked.isZero()) {
            throw new IllegalArgumentException(operation + " deadline " + asked + " must be positive");
        }
        Duration deadline = bounded(asked);
        Finish finish = new Finish(commit, new CompletableFuture<>(), System.nanoTime() + deadline.toNanos(),
                deadline.toMillis());
        synchronized (submitLock) {
            if (endedBy != null) {
                throw new IllegalStateException("transaction " + txnId + " was already ended by " + endedBy + "; "
                        + operation + " is not possible");
            }
            endedBy = operation;
            operations.submit(finish);
        }
        return finish.result();
    }

    /**
     * A deadline the clock arithmetic can carry: at most {@link #LONGEST_DEADLINE}, about 73 years, so that "forever"
     * ({@code ChronoUnit.FOREVER}) waits instead of throwing ArithmeticException (too long for nanoseconds).
     */
    private static Duration bounded(Duration deadline) {
        return deadline.compareTo(LONGEST_DEADLINE) > 0 ? LONGEST_DEADLINE : deadline;
    }

    private void awaitVerdict(CompletableFuture<Void> verdict, Duration asked, String operation) {
        Duration deadline = bounded(asked);
        Duration wait = deadline.plusNanos(VERDICT_GRACE_NANOS);
        try {
            Connection.await(verdict, wait, operation + " of transaction " + txnId);
        } catch (SluiceTimeoutException stuck) {
            if (verdict.isDone()) { // decided just as the wait ended: that verdict, not a guess
                Connection.await(verdict, wait, operation + " of transaction " + txnId);
                return;
            }
            // The network thread may still write the TX_COMMIT: the outcome is as unknown as for a lost answer.
            throw new SluiceTimeoutException(operation + " of transaction " + txnId + ": the client's network thread gave no "
                    + "verdict within " + wait.toMillis() + " ms (the deadline of " + deadline.toMillis() + " ms and "
                    + TimeUnit.NANOSECONDS.toMillis(VERDICT_GRACE_NANOS) + " ms more); it may or may not have "
                    + (operation.equals("commit") ? "committed" : "been rolled back"));
        }
    }

    // ---- on the network thread

    /** On loop: binds the transaction to the current network connection at its first operation. */
    private boolean bindOnLoop() {
        if (phase != Phase.UNBOUND) {
            return true;
        }
        if (connection.activeChannel() == null) {
            failOnLoop(new ConnectionLostException("transaction " + txnId + " could not start: not connected to "
                    + connection.address()), false);
            return false;
        }
        session = connection.session();
        phase = Phase.OPEN;
        connection.transactions().add(this);
        return true;
    }

    private void publishOnLoop(TransactionBatches.Publish publish) {
        int frameLimit = batches.publishFrameLimitOnLoop(publish.queueBytes());
        if (publish.encodedBytes() > frameLimit) {
            failOnLoop(new SluiceException(ErrorCode.MESSAGE_TOO_LARGE, "", "transaction " + txnId
                    + ": a message of " + publish.encodedBytes() + " encoded bytes to queue " + publish.queue()
                    + " exceeds the frame limit of " + frameLimit + "; the transaction was rolled back"), true);
            return;
        }
        batches.stagePublishOnLoop(publish);
    }

    private void ackOnLoop(Message message) {
        if (message.session() != session) {
            failOnLoop(new SluiceException("transaction " + txnId + " cannot acknowledge message " + message.id()
                    + ": it was delivered before the connection to " + connection.address() + " was lost, and the"
                    + " broker has taken it back; the transaction was rolled back", null), true);
            return;
        }
        Consumer consumer = message.consumer();
        if (consumer.unsubscribeSentOnLoop()) {
            // Passed the closed-consumer check just before close(), and reached this thread after its UNSUBSCRIBE.
            failOnLoop(new SluiceException("transaction " + txnId + " cannot acknowledge message " + message.id()
                    + ": its consumer of queue " + consumer.queue() + " was closed, and unsubscribed before the ack"
                    + " could be written (the broker takes the message back); the transaction was rolled back", null), true);
            return;
        }
        batches.stageAckOnLoop(consumer, message);
    }

    /** On loop, before {@code consumer}'s UNSUBSCRIBE: its pending acks are written now (the others keep their batch). */
    void writeAcksOfOnLoop(Consumer consumer) {
        if (writesBatchesOnLoop()) {
            batches.writeAcksOfOnLoop(consumer);
        }
    }

    /** On loop: whether the transaction is bound and its TX_COMMIT or TX_ROLLBACK not written: its batches may go. */
    boolean writesBatchesOnLoop() {
        return phase == Phase.OPEN || phase == Phase.FLUSHING;
    }

    private void finishOnLoop(Finish finish) {
        finishing = finish;
        if (phase == Phase.DONE) {
            complete(finish, finish.commit() ? failure : null); // failed before: rolled back already
            return;
        }
        if (phase == Phase.UNBOUND) {
            phase = Phase.DONE; // nothing reached the broker: nothing to commit or roll back
            complete(finish, null);
            return;
        }
        if (!finish.commit()) {
            batches.discardOnLoop();
            if (batches.begun()) {
                endOnLoop(finish);
            } else {
                doneOnLoop();
                complete(finish, null);
            }
            return;
        }
        batches.writeAcksOnLoop(); // rule: every TX_ACK goes before the TX_COMMIT
        if (batches.writeAllPublishesOnLoop()) {
            endOnLoop(finish);
            return;
        }
        phase = Phase.FLUSHING;
        long waitNanos = Math.max(0, finish.deadlineNanos() - System.nanoTime());
        flushDeadline = connection.scheduleOnLoop(connection.owing("the deadline timer of the commit of transaction " + txnId,
                "the commit fails with the exception", thrown -> complete(finish, thrown), () -> {
                    flushDeadline = null;
                    if (phase == Phase.FLUSHING) {
                        failOnLoop(new SluiceTimeoutException("commit of transaction " + txnId
                                + ": its messages waited for the publish window for longer than the deadline of "
                                + finish.deadlineMs() + " ms; nothing was committed, and the transaction was rolled back"), true);
                    }
                }), waitNanos);
    }

    /** On loop: writes TX_COMMIT or TX_ROLLBACK as a request with what is left of the deadline. */
    private void endOnLoop(Finish finish) {
        Channel channel = connection.activeChannel();
        batches.beginOnLoop(channel); // written already, unless a commit's messages all waited for the window
        phase = Phase.ANSWER_AWAITED;
        String what = (finish.commit() ? "TX_COMMIT" : "TX_ROLLBACK") + " of transaction " + txnId;
        long remainingMs = Math.max(1, TimeUnit.NANOSECONDS.toMillis(finish.deadlineNanos() - System.nanoTime()));
        CompletableFuture<Frame> answer = new CompletableFuture<>();
        long requestId = connection.requestSender().addRequestOnLoop(
                finish.commit() ? FrameType.TX_COMMIT : FrameType.TX_ROLLBACK, what, answer, remainingMs);
        batches.writeOnLoop(channel,
                finish.commit() ? new TxCommitFrame(requestId, txnId) : new TxRollbackFrame(requestId, txnId));
        // Dropped with the task once the connection is closed: its close settles the call.
        answer.whenComplete((ok, refused) -> connection.executeOnLoop(() -> settlingOnThrow(finish, () -> answeredOnLoop(finish, refused))));
    }

    /**
     * On loop: {@code step} towards {@code finish}'s verdict; what it throws fails the call at once with the exception.
     * Thrown out of a task, Netty would log and drop it (a scheduled task's, without a word), and the call would wait
     * for good: its request answered, or its deadline's timer run.
     */
    private void settlingOnThrow(Finish finish, Runnable step) {
        try {
            step.run();
        } catch (RuntimeException | Error e) {
            complete(finish, e);
        }
    }

    private void answeredOnLoop(Finish finish, Throwable refused) {
        if (phase == Phase.DONE) {
            return; // settled already, by a TX_ABORTED or the lost connection
        }
        doneOnLoop();
        if (refused == null) {
            complete(finish, null);
        } else if (!finish.commit()) {
            boolean rolledBackAnyway = refused instanceof SluiceException sluice
                    && sluice.errorCode() == ErrorCode.UNKNOWN_TRANSACTION;
            complete(finish, rolledBackAnyway ? null : refused);
        } else if (refused instanceof SluiceTimeoutException) {
            failure = new SluiceTimeoutException("TX_COMMIT of transaction " + txnId + " got no answer from "
                    + connection.address() + " within the deadline of " + finish.deadlineMs()
                    + " ms; it may or may not have committed");
            complete(finish, failure);
        } else {
            failure = refused instanceof SluiceException sluice ? sluice
                    : new SluiceException("commit of transaction " + txnId + " failed: " + refused, refused);
            complete(finish, failure);
        }
    }

    /** On loop, from {@link OpenTransactions}: the broker rolled the transaction back. */
    void abortedOnLoop(TxAbortedFrame aborted) {
        if (phase == Phase.ANSWER_AWAITED && !finishing.commit()) {
            doneOnLoop(); // the rollback asked for is what happened
            complete(finishing, null);
            return;
        }
        // The broker keeps an aborted transaction, counted in transactions.max-open-per-connection, until its
        // client commits or rolls it back: TX_ROLLBACK, unless a TX_COMMIT it will answer is on its way.
        failOnLoop(new SluiceException(aborted.errorCode(), aborted.message(), "transaction " + txnId
                + " was rolled back by the broker: " + aborted.errorCode() + ": " + aborted.message()),
                phase != Phase.ANSWER_AWAITED);
    }

    /** On loop, from {@link OpenTransactions}: more publish window. */
    void windowWidenedOnLoop() {
        if (phase == Phase.OPEN) {
            batches.writeFullPublishesOnLoop();
        } else if (phase == Phase.FLUSHING && batches.writeAllPublishesOnLoop()) {
            if (flushDeadline != null) {
                flushDeadline.cancel(false);
                flushDeadline = null;
            }
            endOnLoop(finishing);
        }
        batches.flushChannelOnLoop();
    }

    /** On loop, from {@link OpenTransactions}: the network connection closed; the broker rolls back what is open. */
    void connectionLostOnLoop(ConnectionLostException lost) {
        batches.forgetAcksOnLoop(); // the broker took back every delivery of the closed connection
        if (phase == Phase.ANSWER_AWAITED && finishing.commit()) {
            doneOnLoop();
            failure = new ConnectionLostException(lost.getMessage() + " before the broker answered TX_COMMIT of"
                    + " transaction " + txnId + "; it may or may not have committed", lost);
            complete(finishing, failure);
            return;
        }
        failOnLoop(new ConnectionLostException("transaction " + txnId + " failed: " + lost.getMessage()
                + "; the broker rolls back the open transactions of a closed connection", lost), false);
    }

    /**
     * On loop: fails the transaction; with {@code rollBack} (a failure the broker does not know of, or an abort
     * it keeps until told) it writes TX_ROLLBACK, whose answer nobody waits for. A commit being carried out
     * fails; a rollback succeeds.
     */
    void failOnLoop(SluiceException reason, boolean rollBack) {
        if (phase == Phase.DONE) {
            return;
        }
        failure = reason;
        batches.discardOnLoop();
        Channel channel = connection.activeChannel();
        if (rollBack && batches.begun() && channel != null) {
            long requestId = connection.requestSender().addRequestOnLoop(FrameType.TX_ROLLBACK,
                    "TX_ROLLBACK of failed transaction " + txnId, new CompletableFuture<>(),
                    TimeUnit.MILLISECONDS.convert(connection.options().requestTimeout())); // saturated
            batches.writeRollbackOfFailedOnLoop(channel, new TxRollbackFrame(requestId, txnId));
            batches.flushChannelOnLoop();
        }
        doneOnLoop();
        if (finishing != null) {
            complete(finishing, finishing.commit() ? reason : null);
        }
    }

    private void doneOnLoop() {
        phase = Phase.DONE;
        batches.cancelAckFlushOnLoop();
        if (flushDeadline != null) {
            flushDeadline.cancel(false);
            flushDeadline = null;
        }
        connection.transactions().remove(this);
    }

    private void complete(Finish finish, Throwable failed) {
        connection.completeOnDispatch(finish.result(), null, failed);
    }

    /** Takes the operations on the network thread, in call order. */
    private final class Operations implements LoopBatcher.Sink<Object> {
        @Override
        public void onLoop(Object operation) {
            if (operation instanceof Finish finish) {
                settlingOnThrow(finish, () -> finishOnLoop(finish));
            } else if (phase == Phase.DONE) {
                if (operation instanceof Message message) {
                    // Acked as the transaction failed: back to the queue (the consumer drops a stale one).
                    message.consumer().nack(message, NackAction.REQUEUE, 0);
                }
            } else {
                try {
                    takeOnLoop(operation);
                } catch (RuntimeException | Error e) {
                    // Dropped where it threw, the publish or ack would be missing from a commit answered OK: the
                    // transaction fails instead, and its commit with it.
                    String what = operation instanceof TransactionBatches.Publish ? "publish" : "transactional ack";
                    failOnLoop(new SluiceException("transaction " + txnId + " failed taking a " + what
                            + " on the client's network thread: " + e, e), true);
                }
            }
        }

        private void takeOnLoop(Object operation) {
            if (bindOnLoop()) {
                if (operation instanceof TransactionBatches.Publish publish) {
                    publishOnLoop(publish);
                } else {
                    ackOnLoop((Message) operation);
                }
            }
        }

        @Override
        public void endOfBatch() {
            batches.flushChannelOnLoop();
        }

        @Override
        public void rejected(Object operation) {
            // The connection is closed: the broker rolled the transaction back, if it ever saw it.
            if (operation instanceof Finish finish && finish.commit()) {
                finish.result().completeExceptionally(connection.closedException());
            } else if (operation instanceof Finish finish) {
                finish.result().complete(null);
            }
        }
    }

    private record Finish(boolean commit, CompletableFuture<Void> result, long deadlineNanos, long deadlineMs) {
    }
}
