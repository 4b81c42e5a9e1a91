package io.sluice.client;

import io.sluice.protocol.ErrorCode;

/**
 * A request, publish or connection failed. When the broker refused something, {@link #errorCode()} is the code
 * it sent and {@link #brokerMessage()} its explanation; failures found by the client carry
 * {@link ErrorCode#NONE} and an empty broker message, but for the broker breaking the protocol
 * ({@link UnexpectedAnswerException}: {@link ErrorCode#UNEXPECTED_FRAME}).
 */
public class SluiceException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode errorCode;
    private final String brokerMessage;

    public SluiceException(ErrorCode errorCode, String brokerMessage, String message) {
        super(message);
        this.errorCode = errorCode;
        this.brokerMessage = brokerMessage;
    }

    public SluiceException(String message, Throwable cause) {
        super(message, cause);
        this.errorCode = ErrorCode.NONE;
        this.brokerMessage = "";
    }

    /** The broker's error code, {@link ErrorCode#NONE} when the client detected the failure itself. */
    public ErrorCode errorCode() {
        return errorCode;
    }

    /** The broker's sentence explaining the failure; empty when the client detected it. */
    public String brokerMessage() {
        return brokerMessage;
    }

    /** Whether sending the same request again may succeed. */
    public boolean retriable() {
        return errorCode.retriable();
    }
}
