package io.sluice.broker.txn;

import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.HeldAcks;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.PublishFrame;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One connection's transactions, by the id its client chose: what its TX_ frames do before the
 * coordinator takes over. The session checks permissions and finds queues and subscriptions; this
 * class finds the transaction, keeps {@code transactions.max-open-per-connection}, and hands the
 * work to the coordinator's thread in frame order.
 *
 * <p>Threads: the connection's event loop calls every method; the coordinator removes a transaction
 * once it is finished, hence the concurrent map.
 */
public final class ConnectionTransactions {
    private final TransactionCoordinator coordinator;
    private final TransactionLink link;
    private final Map<Long, Transaction> open = new ConcurrentHashMap<>();

    ConnectionTransactions(TransactionCoordinator coordinator, TransactionLink link) {
        this.coordinator = coordinator;
        this.link = link;
    }

    /** TX_BEGIN. A reused id is an ERROR to no request; past the cap, the transaction is refused with TX_ABORTED. */
    public void begin(long txnId, int timeoutMs) {
        if (open.containsKey(txnId)) {
            link.answerError(0, ErrorCode.TRANSACTION_ID_IN_USE, "TX_BEGIN of transaction " + txnId
                    + ": a transaction with this id is already open on this connection");
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
        coordinator.executor().execute(() -> coordinator.begin(t, timeout));
    }

    /**
     * TX_PUBLISH to {@code queue}, which the session found and may write: staged by the coordinator,
     * which releases the frame and gives its window back. An unknown transaction is an ERROR to no
     * request; the frame is released and its window given back here.
     */
    public void publish(long txnId, BrokerQueue queue, PublishFrame frame, long payloadBytes) {
        Transaction t = find(txnId, "TX_PUBLISH");
        if (t == null) {
            link.publishCredit(frame.messageCount(), payloadBytes);
            frame.release();
            return;
        }
        coordinator.executor().execute(() -> coordinator.stage(t, queue, frame, payloadBytes));
    }

    /**
     * A TX_PUBLISH or TX_ACK the session refused (no permission, no such queue or subscription): the
     * transaction is rolled back and its client told. Returns false if the transaction is unknown.
     */
    public boolean refuse(long txnId, String frame, ErrorCode code, String message) {
        Transaction t = find(txnId, frame);
        if (t != null) {
            coordinator.executor().execute(() -> coordinator.abort(t, code, message));
        }
        return t != null;
    }

    /** True if {@code txnId} is open here; else answers the ERROR of an unknown transaction to {@code frame}. */
    public boolean isOpen(long txnId, String frame) {
        return find(txnId, frame) != null;
    }

    /** TX_ACK: {@code hold} completes on the queue's executor with the deliveries it took off the consumer. */
    public void ack(long txnId, CompletableFuture<HeldAcks> hold) {
        Transaction t = open.get(txnId);
        if (t == null) { // it ended between isOpen and now: what was held goes back
            hold.thenAccept(h -> h.queue().transactions().release(h));
            return;
        }
        coordinator.executor().execute(() -> t.pending.add(hold.thenAcceptAsync(h -> coordinator.held(t, h), coordinator.executor())));
    }

    public void commit(long requestId, long txnId) {
        Transaction t = open.get(txnId);
        if (t == null) {
            link.answerError(requestId, ErrorCode.UNKNOWN_TRANSACTION, unknown(txnId, "TX_COMMIT"));
            return;
        }
        coordinator.executor().execute(() -> coordinator.commit(t, requestId));
    }

    public void rollback(long requestId, long txnId) {
        Transaction t = open.get(txnId);
        if (t == null) {
            link.answerError(requestId, ErrorCode.UNKNOWN_TRANSACTION, unknown(txnId, "TX_ROLLBACK"));
            return;
        }
        coordinator.executor().execute(() -> coordinator.rollback(t, requestId));
    }

    /** The connection closed: every transaction still open is rolled back. */
    public void close() {
        for (Transaction t : open.values()) {
            coordinator.executor().execute(() -> coordinator.connectionClosed(t));
        }
    }

    /** Transactions of this connection not yet finished (open, committing, or rolled back by the broker and not yet told). */
    public int size() {
        return open.size();
    }

    void forget(Transaction t) {
        open.remove(t.clientId, t);
    }

    private Transaction find(long txnId, String frame) {
        Transaction t = open.get(txnId);
        if (t == null) {
            link.answerError(0, ErrorCode.UNKNOWN_TRANSACTION, unknown(txnId, frame));
        }
        return t;
    }

    private static String unknown(long txnId, String frame) {
        return frame + " names transaction " + txnId + ", which is not open on this connection (never begun, or already "
                + "committed or rolled back)";
    }
}
