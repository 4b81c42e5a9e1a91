package io.sluice.broker.txn;

import io.netty.util.concurrent.EventExecutor;
import io.sluice.broker.queue.ProducerLink;
import io.sluice.protocol.ErrorCode;

/**
 * A connection as the transaction coordinator sees it: besides a producer's links (the publish
 * window of TX_PUBLISH goes back with PUBLISH_CREDIT, W1), the answers to TX_COMMIT and TX_ROLLBACK
 * and the TX_ABORTED the broker sends of its own accord. Thread-safe.
 */
public interface TransactionLink extends ProducerLink {
    /** TX_ABORTED: the broker rolled transaction {@code txnId} back, for this reason. */
    void transactionAborted(long txnId, ErrorCode code, String message);

    /** OK to request {@code requestId}. */
    void answerOk(long requestId);

    /** ERROR to request {@code requestId} (0: to no request). */
    void answerError(long requestId, ErrorCode code, String message);

    /** The connection's event loop, where its frames are read: a transaction's timeout is kept there. */
    EventExecutor loop();
}
