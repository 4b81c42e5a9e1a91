package io.sluice.client;

import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FrameType;

/**
 * The broker answered a request with a frame of another type than the request accepts (docs/protocol.md, "Queue
 * management"): a DECLARE_QUEUE answered with PRODUCER_OK, say. The broker broke the protocol, so the client fails the request with
 * this, logs it, and closes the network connection, as for a frame of an unknown type; whether the request took effect
 * is unknown. {@link #errorCode()} is {@link ErrorCode#UNEXPECTED_FRAME}, found by the client (no broker message).
 */
public final class UnexpectedAnswerException extends SluiceException {
    private static final long serialVersionUID = 1L;

    private final FrameType expected;
    private final FrameType received;

    UnexpectedAnswerException(String request, long requestId, FrameType expected, FrameType received) {
        super(ErrorCode.UNEXPECTED_FRAME, "", request + " (request " + requestId + ") was answered with " + received
                + ", expected " + expected + " or ERROR; whether it took effect is unknown: the broker broke the protocol,"
                + " and the client closes the connection");
        this.expected = expected;
        this.received = received;
    }

    /** The type of answer the request accepts, ERROR aside. */
    public FrameType expected() {
        return expected;
    }

    /** The type of the frame that came instead. */
    public FrameType received() {
        return received;
    }
}
