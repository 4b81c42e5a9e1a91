package io.sluice.storage.dedup;

/**
 * A queue's producer table has granted its highest epoch ({@link Integer#MAX_VALUE}), so no new instance of a named
 * producer can register with it (rule E1 needs an epoch above every one granted). A client's refusal, not a broker
 * failure: an instance may resume with any epoch it names from its floor on, so a client can bring a queue here.
 */
public final class ProducerEpochsExhaustedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ProducerEpochsExhaustedException(String message) {
        super(message);
    }
}
