package io.sluice.broker.txn;

import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.HeldAcks;
import io.sluice.broker.queue.QueueTransactions;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.PublishFrame;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;

/**
 * One connection's transactions, by the id its client chose: what its TX_ frames do before the
 * coordinator takes over. The session checks permissions and finds queues and subscriptions; this
 * class finds the transaction, keeps {@code transactions.max-open-per-connection}, and hands the
 * work to the coordinator's thread in frame order. TX_BEGIN is done here (its timeout is kept on this loop).
 * A TX_PUBLISH or TX_ACK goes to its queue from here; the transaction notes it in frame order
 * ({@code Transaction.started}), so a TX_COMMIT after it waits for it, and the coordinator's thread takes its
 * result in when it needs it (rule "taken in when needed" of {@code Transaction.started}).
 *
 * <p>Threads: the connection's event loop calls every method; the coordinator removes a transaction
 * once it is finished, hence the concurrent map.
 */
public final class ConnectionTransactions {
    private static final Logger LOG = LoggerFactory.getLogger(ConnectionTransactions.class);
    private final TransactionCoordinator coordinator;
    private final TransactionLink link;
    private final Map<Long, Transaction> open = new ConcurrentHashMap<>();

    ConnectionTransactions(TransactionCoordinator coordinator, TransactionLink link) {
        this.coordinator = coordinator;
        this.link = link;
    }

    /**
     * TX_BEGIN. Past the cap, the transaction is refused with TX_ABORTED TRANSACTION_LIMIT. A reused id
     * rolls back the transaction open under it (TX_ABORTED TRANSACTION_ID_IN_USE): the frames that follow
     * could belong to either. One that can no longer be rolled back (its TX_COMMIT came, or the broker rolled it
     * back and its client has not ended it) is left as it is, and the TX_BEGIN refused with ERROR
     * TRANSACTION_ID_IN_USE to no request.
     */
    public void begin(long txnId, int timeoutMs) {
        Transaction existing = open.get(txnId);
        if (existing != null) {
            // A frame after the TX_COMMIT must not undo it: the commit may still wait here for its stagings, and the
            // rollback handed over now would overtake it.
            if (existing.commitReceived || existing.undone) {
                link.answerError(0, ErrorCode.TRANSACTION_ID_IN_USE, inUse(txnId));
                return;
            }
            coordinator.executor().execute(() -> {
                if (!coordinator.abort(existing, ErrorCode.TRANSACTION_ID_IN_USE, "TX_BEGIN reused id " + txnId + " of a "
                        + "transaction open on this connection; that transaction is rolled back, since the frames that follow "
                        + "could belong to either")) {
                    link.answerError(0, ErrorCode.TRANSACTION_ID_IN_USE, inUse(txnId)); // it was rolled back meanwhile
                }
            });
            return;
        }
        int max = coordinator.limits.maxOpenPerConnection;
        if (open.size() >= max) {
            link.transactionAborted(txnId, ErrorCode.TRANSACTION_LIMIT, "transaction " + txnId + " would be open with "
                    + open.size() + " others on this connection, over transactions.max-open-per-connection " + max);
            return;
        }
        long timeout = timeoutMs > 0 ? Math.min(timeoutMs, coordinator.limits.timeoutMs) : coordinator.limits.timeoutMs;
        Transaction t = new Transaction(this, link, txnId, coordinator.newNumber());
        open.put(txnId, t);
        coordinator.begin(t, timeout); // here, on the loop: TX_BEGIN brings the coordinator's thread round no more
    }

    /**
     * TX_PUBLISH to {@code queue}, which the session found and may write: the frame goes straight to
     * the queue, which stages its messages there, releases it and gives its window back as its flow
     * control allows; the transaction notes it in frame order, and the coordinator takes the staging once it
     * is done. An unknown transaction is an ERROR
     * to no request; the frame is released and its window given back here.
     */
    public void publish(long txnId, BrokerQueue queue, PublishFrame frame, long windowBytes, long heldBytes) {
        Transaction t = find(txnId, "TX_PUBLISH");
        if (t == null || refusedBeforeStored(t, queue) || overCapsBeforeStored(t, frame)) {
            link.publishCredit(frame.messageCount(), windowBytes, heldBytes);
            frame.release();
            return;
        }
        if (coordinator.replicated()) {
            // A cluster stores nothing before the commit's entry (R13): the messages are copied, the window comes back now,
            // and the queue's quota counts them until the transaction ends (R9).
            ReplicatedCommits.Messages messages;
            try {
                messages = ReplicatedCommits.copy(queue, frame);
            } finally {
                frame.release();
            }
            link.publishCredit(messages.count(), windowBytes, heldBytes);
            CompletableFuture<ReplicatedCommits.Messages> admitted = ReplicatedCommits.admit(messages, coordinator.maxUncommittedBytes());
            coordinator.collecting(t, admitted);
            return;
        }
        CompletableFuture<QueueTransactions.Staging> staging = queue.transactions().stage(t.number, frame, link, windowBytes, heldBytes);
        coordinator.staging(t, queue, staging);
    }

    /**
     * Rule "refused before stored": a TX_PUBLISH that can be no part of {@code t} is answered here, with ERROR to no
     * request, and its queue never sees it: {@code t} was rolled back (by the broker, which told its client with
     * TX_ABORTED, or by an ending under way), its TX_COMMIT came before it, or this loop found an earlier TX_PUBLISH
     * of it over a cap ({@link #overCapsBeforeStored}): staged in its queue, such a frame would be written to disk
     * only to be discarded once the coordinator's thread took it in. The first test is a hint (a rollback that the loop does
     * not see yet still discards what the frame stages); the others are exact, since this loop set what they read.
     * Returns true if the frame was refused.
     */
    private boolean refusedBeforeStored(Transaction t, BrokerQueue queue) {
        if (t.undone) {
            ErrorCode code = t.abortCode == null ? ErrorCode.UNKNOWN_TRANSACTION : t.abortAnswerCode();
            link.answerError(0, code, "TX_PUBLISH to queue '" + queue.name() + "' names " + t.describe() + ", which was "
                    + "rolled back" + (t.abortCode == null ? "" : " by the broker (" + t.abortReason + ")")
                    + "; its messages were not stored");
            return true;
        }
        if (t.commitReceived) {
            link.answerError(0, ErrorCode.UNKNOWN_TRANSACTION, t.describe() + " is committing; a TX_PUBLISH to queue '"
                    + queue.name() + "' after its TX_COMMIT is not part of it and was not stored");
            return true;
        }
        if (t.overCapsOnLoop != null) { // its rollback is handed over, not yet done
            link.answerError(0, ErrorCode.TRANSACTION_ABORTED, "TX_PUBLISH to queue '" + queue.name() + "' names "
                    + t.describe() + ", which was rolled back by the broker (" + t.overCapsOnLoop + "); its messages were "
                    + "not stored");
            return true;
        }
        return false;
    }

    /**
     * Rule "caps before the queue": the caps on what a transaction publishes ({@code transactions.max-messages} and
     * {@code max-bytes}) are checked here, against every TX_PUBLISH of it so far, before the frame goes to its queue.
     * One over them rolls the transaction back (TX_ABORTED TRANSACTION_LIMIT) and its queue never sees it: checked
     * later, the queue's quota would admit it first, drop-oldest dropping visible messages to make room, and store it
     * (on a cluster node: copy it, give its window back and count it as uncommitted) before the coordinator's thread
     * found the cap passed. This is the one check of {@code max-bytes}; the coordinator
     * checks {@code max-messages} again with the acknowledged messages counted too, which only the queues know.
     * Returns true if the frame was refused.
     */
    private boolean overCapsBeforeStored(Transaction t, PublishFrame frame) {
        long messages = t.publishedOnLoop + frame.messageCount();
        long bytes = t.publishedBytesOnLoop + frame.messageBytes();
        String over = overPublishCaps(t, messages, bytes);
        if (over == null) {
            t.publishedOnLoop = messages;
            t.publishedBytesOnLoop = bytes;
            return false;
        }
        t.overCapsOnLoop = over;
        coordinator.executor().execute(() -> coordinator.abort(t, ErrorCode.TRANSACTION_LIMIT, over));
        return true;
    }

    /** Why {@code t}, having published {@code messages} messages of {@code bytes} bytes, is over its caps, or null. */
    private String overPublishCaps(Transaction t, long messages, long bytes) {
        BrokerConfig.Transactions limits = coordinator.limits;
        if (messages > limits.maxMessages) {
            return t.describe() + " would have " + messages + " messages, over transactions.max-messages " + limits.maxMessages;
        }
        if (bytes > limits.maxBytes) {
            return t.describe() + " would publish " + bytes + " bytes, over transactions.max-bytes " + limits.maxBytes;
        }
        return null;
    }

    /**
     * A TX_PUBLISH or TX_ACK the session refused (no permission, no such queue or subscription): the
     * transaction is rolled back and its client told, with TRANSACTION_ABORTED and a sentence naming the
     * frame and the refusal's own code and reason.
     */
    public void refuse(long txnId, String frame, ErrorCode code, String message) {
        Transaction t = find(txnId, frame);
        if (t != null && t.commitReceived) { // no part of the commit before it, which it must not undo
            link.answerError(0, ErrorCode.UNKNOWN_TRANSACTION, t.describe() + " is committing; a " + frame + " after its "
                    + "TX_COMMIT is not part of it, and this one was refused (" + code + "): " + message);
        } else if (t != null) {
            coordinator.executor().execute(() -> coordinator.abort(t, ErrorCode.TRANSACTION_ABORTED,
                    TransactionCoordinator.refused(frame, code, message)));
        }
    }

    /**
     * TX_ACK: {@code hold} completes on the queue's executor with the deliveries it took off the
     * consumer. For a transaction not open here they go straight back to their queue, as a rollback's; so do they
     * for one whose TX_COMMIT came before, which the TX_ACK is no part of (rule "refused before stored"), and its
     * client is told: were it taken into the commit when its hold completed before the commit's record was built, a
     * commit would acknowledge what its client acknowledged after it.
     */
    public void ack(long txnId, CompletableFuture<HeldAcks> hold) {
        Transaction t = find(txnId, "TX_ACK");
        if (t != null && t.commitReceived) {
            link.answerError(0, ErrorCode.UNKNOWN_TRANSACTION, t.describe() + " is committing; a TX_ACK after its "
                    + "TX_COMMIT is not part of it, and the deliveries it names go back to their queue");
        }
        if (t == null || t.commitReceived) {
            hold.thenAccept(h -> h.queue().transactions().release(h));
            return;
        }
        coordinator.holding(t, hold);
    }

    public void commit(long requestId, long txnId) {
        Transaction t = open.get(txnId);
        if (t == null) {
            link.answerError(requestId, ErrorCode.UNKNOWN_TRANSACTION, unknown(txnId, "TX_COMMIT"));
            return;
        }
        if (t.commitReceived) { // answered here: handed over, it could overtake the first, which waits for its stagings
            link.answerError(requestId, ErrorCode.UNKNOWN_TRANSACTION, t.describe() + " is already committing");
            return;
        }
        t.commitReceived = true;
        // docs/protocol.md: the timeout counts from TX_BEGIN to the arrival of TX_COMMIT. It is kept on this loop, so
        // cancelled here it cannot fire any more; one that fired before handed its rollback over first, and the commit
        // is answered with it.
        t.timeout.cancel(false);
        // Rule "commit once its operations are in": the TX_COMMIT goes to the coordinator's thread once every staging
        // and hold before it has completed (handed over by the queue that completes the last), so that thread takes
        // the commit in one turn rather than a turn for the frame and another when they complete.
        List<CompletableFuture<?>> underWay = new ArrayList<>();
        for (Transaction.Operation op : t.started) {
            if (!op.result.isDone()) {
                underWay.add(op.result);
            }
        }
        if (underWay.isEmpty()) {
            handOverCommit(t, requestId);
        } else {
            CompletableFuture.allOf(underWay.toArray(CompletableFuture[]::new)).whenComplete((x, failed) -> handOverCommit(t, requestId));
        }
    }

    /**
     * Hands {@code t}'s commit to the coordinator's thread. Refused once the coordinator has stopped (a shutdown whose
     * connections closed while the commit waited for its stagings): no commit record is written, and the next start
     * rolls the transaction back (X4). The refusal would stay in a future nobody reads, so it is said here, once per
     * commit.
     */
    private void handOverCommit(Transaction t, long requestId) {
        try {
            coordinator.executor().execute(() -> coordinator.commit(t, requestId));
        } catch (RejectedExecutionException e) {
            LOG.info("The TX_COMMIT of {} came before the broker's shutdown, but the frames before it were in only after "
                    + "the transactions stopped: no commit record was written, and the next start rolls it back.", t.describe());
        }
    }

    public void rollback(long requestId, long txnId) {
        Transaction t = open.get(txnId);
        if (t == null) {
            link.answerError(requestId, ErrorCode.UNKNOWN_TRANSACTION, unknown(txnId, "TX_ROLLBACK"));
            return;
        }
        if (t.commitReceived) { // the commit may still wait here for its stagings: handed over now, this would overtake it
            link.answerError(requestId, ErrorCode.UNKNOWN_TRANSACTION, t.describe() + " is committing; it can no longer be "
                    + "rolled back");
            return;
        }
        coordinator.executor().execute(() -> coordinator.rollback(t, requestId));
    }

    /**
     * The connection closed: every transaction still open is rolled back. One whose TX_COMMIT this loop received is
     * no longer open: its commit goes ahead, as its client asked, and only its answer is lost (docs/transactions.md,
     * "A lost answer"). Its TX_COMMIT may not have reached the coordinator yet (it waits here for the stagings and
     * holds before it, rule "commit once its operations are in"), so the coordinator, which would still see it open,
     * is not told of the close: it would roll such a commit back.
     */
    public void close() {
        for (Transaction t : open.values()) {
            if (!t.commitReceived) {
                coordinator.executor().execute(() -> coordinator.connectionClosed(t));
            }
        }
    }

    /** Transactions of this connection not yet finished (open, committing, or rolled back by the broker and not yet told). */
    public int size() {
        return open.size();
    }

    void forget(Transaction t) {
        open.remove(t.clientId, t);
    }

    /** The transaction open under {@code txnId}; else tells the client with TX_ABORTED UNKNOWN_TRANSACTION and returns null. */
    private Transaction find(long txnId, String frame) {
        Transaction t = open.get(txnId);
        if (t == null) {
            link.transactionAborted(txnId, ErrorCode.UNKNOWN_TRANSACTION, unknown(txnId, frame));
        }
        return t;
    }

    private static String inUse(long txnId) {
        return "TX_BEGIN reused id " + txnId + " of a transaction still on this connection that can no longer be rolled "
                + "back (its TX_COMMIT came, or the broker rolled it back: its TX_COMMIT or TX_ROLLBACK learns why); no "
                + "transaction was begun, and that one is left as it is";
    }

    private static String unknown(long txnId, String frame) {
        return frame + " names transaction " + txnId + ", which is not open on this connection (never begun, or already "
                + "committed or rolled back)";
    }
}
