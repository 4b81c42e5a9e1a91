package io.sluice.client;

import io.sluice.protocol.ErrorCode;

/**
 * Told of each ERROR the broker sends to no request (request id 0): what it could not do of a frame that has no answer
 * of its own. Among them, STORAGE_FAILED for an ack, or a nack to the dead-letter queue, that the queue's storage failed
 * to apply (the message stays in the queue and is delivered again: the settlement was not taken), UNKNOWN_MESSAGE_ID for
 * an ack or nack of ids not outstanding, RESOURCE_LIMIT for credit past the connection's bound, and the refusals of a
 * transaction's frames (docs/protocol.md, "Errors"). The sentence names the queue, the consumer tag and the messages.
 * Set with {@link ConnectionOptions.Builder#errorListener}; the client logs each such error at WARN as well (at most one
 * line a minute per code). Called on a client dispatch thread, in the order the errors came, or on the network thread
 * with {@link ConnectionOptions#callbacksOnNetworkThread()}; it must not block for long. What it throws is logged.
 */
@FunctionalInterface
public interface ErrorListener {
    /**
     * @param code    the error's code; {@link ErrorCode#UNKNOWN} for one this client does not know
     * @param message the broker's sentence
     */
    void onError(ErrorCode code, String message);
}
