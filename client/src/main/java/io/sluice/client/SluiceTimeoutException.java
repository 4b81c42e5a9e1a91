package io.sluice.client;

import io.sluice.protocol.ErrorCode;

/**
 * The broker did not answer within the deadline. The request may still succeed later: a publish that timed
 * out stays in flight and may yet be confirmed.
 */
public class SluiceTimeoutException extends SluiceException {
    private static final long serialVersionUID = 1L;

    public SluiceTimeoutException(String message) {
        super(ErrorCode.NONE, "", message);
    }

    @Override
    public boolean retriable() {
        return true;
    }
}
