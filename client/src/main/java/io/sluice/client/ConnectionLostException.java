package io.sluice.client;

import io.sluice.protocol.ErrorCode;

/**
 * The connection to the broker closed (or was never established) before the request was answered. The
 * broker may or may not have acted on it.
 */
public class ConnectionLostException extends SluiceException {
    private static final long serialVersionUID = 1L;

    public ConnectionLostException(String message) {
        super(ErrorCode.NONE, "", message);
    }

    public ConnectionLostException(String message, Throwable cause) {
        super(message, cause);
    }

    @Override
    public boolean retriable() {
        return true;
    }
}
