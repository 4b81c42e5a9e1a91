package io.sluice.broker.error;

import io.sluice.protocol.ErrorCode;

/**
 * A failure the broker reports to a client: thrown where the error arises, with the code it goes out
 * under and a sentence naming what was wrong. {@link ErrorCodes} maps every failure, these and the
 * storage engine's, to its code in one place.
 */
public class BrokerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;

    public BrokerException(ErrorCode code, String message) {
        super(message, null, false, false);
        this.code = code;
    }

    public ErrorCode code() {
        return code;
    }
}
