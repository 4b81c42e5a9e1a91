package io.sluice.broker.queue;

/**
 * A queue keeps an owner for every named producer registered on an open connection (rule P2 of docs/broker-core.md)
 * and refuses a new one past its bound: RESOURCE_LIMIT, with a sentence naming the bound and the remedy.
 */
public final class NamedProducersExhaustedException extends RuntimeException {
    NamedProducersExhaustedException(String message) {
        super(message);
    }
}
