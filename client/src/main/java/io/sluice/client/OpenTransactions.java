package io.sluice.client;

import io.sluice.protocol.TxAbortedFrame;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The {@link Transaction}s of one {@link Connection} that are bound to its current network connection, by
 * id, and the source of their ids. The map is owned by the network thread (every method but
 * {@link #nextId()} runs there); ids are handed out on any thread, counting from 1 for the life of the
 * connection, so an id is never 0 and never used twice, across reconnects too.
 */
final class OpenTransactions {
    private static final Logger LOG = LoggerFactory.getLogger(OpenTransactions.class);

    private final AtomicLong nextId = new AtomicLong(1);
    private final Map<Long, Transaction> byId = new HashMap<>();

    long nextId() {
        return nextId.getAndIncrement();
    }

    void add(Transaction transaction) {
        byId.put(transaction.id(), transaction);
    }

    void remove(Transaction transaction) {
        byId.remove(transaction.id(), transaction);
    }

    /** A TX_ABORTED for an id with no transaction here (already ended, or aborted twice) is dropped. */
    void abortedOnLoop(TxAbortedFrame aborted) {
        Transaction transaction = byId.get(aborted.txnId());
        if (transaction != null) {
            transaction.abortedOnLoop(aborted);
        } else {
            LOG.debug("Dropped a TX_ABORTED for transaction {}, which is not open: {} {}", aborted.txnId(),
                    aborted.errorCode(), aborted.message());
        }
    }

    /** PUBLISH_CREDIT widened the publish window: transactions holding messages back may write them. */
    void windowWidenedOnLoop() {
        for (Transaction transaction : List.copyOf(byId.values())) {
            transaction.windowWidenedOnLoop();
        }
    }

    /** {@code consumer} is about to UNSUBSCRIBE: each transaction writes the acks of its messages it still batches. */
    void consumerUnsubscribingOnLoop(Consumer consumer) {
        for (Transaction transaction : List.copyOf(byId.values())) {
            transaction.writeAcksOfOnLoop(consumer);
        }
    }

    /** The network connection closed: every transaction bound to it fails, or its commit is in doubt. */
    void connectionLostOnLoop(ConnectionLostException lost) {
        List<Transaction> open = List.copyOf(byId.values());
        byId.clear();
        for (Transaction transaction : open) {
            transaction.connectionLostOnLoop(lost);
        }
    }
}
