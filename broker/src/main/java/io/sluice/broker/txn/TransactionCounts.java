package io.sluice.broker.txn;

import java.util.concurrent.atomic.LongAdder;

/**
 * What the broker's transactions came to since it started, for the metrics ({@code sluice_transactions_*}) and the
 * tests. Each figure is counted where its event happens: a commit on the thread that answers it (rule "answer from
 * the last part"), an apply failure on the queue's executor that applied its part, the rest on the coordinator's
 * thread. Read from any thread.
 */
public final class TransactionCounts {
    private final LongAdder commits = new LongAdder();
    private volatile long rollbacks;
    private volatile long timeouts;
    private volatile long aborts;
    private final LongAdder applyFailures = new LongAdder();
    private final LongAdder operationsStarted = new LongAdder();

    void committed() {
        commits.increment();
    }

    /** Coordinator thread. */
    void rolledBack() {
        rollbacks++;
    }

    /** Coordinator thread. */
    void timedOut() {
        timeouts++;
    }

    /** Coordinator thread. */
    void aborted() {
        aborts++;
    }

    void applyFailed() {
        applyFailures.increment();
    }

    /** A TX_PUBLISH or TX_ACK kept as an operation of its transaction; on the connection's loop. */
    void operationStarted() {
        operationsStarted.increment();
    }

    public long commits() {
        return commits.sum();
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

    /** Parts of commits whose acknowledgements the queue could not store (the next start applies them again). */
    public long applyFailures() {
        return applyFailures.sum();
    }

    /**
     * TX_PUBLISH and TX_ACK frames kept as operations of their transaction: each is held until its transaction ends,
     * so an empty frame, which stages and holds nothing, must not count here.
     */
    public long operationsStarted() {
        return operationsStarted.sum();
    }
}
