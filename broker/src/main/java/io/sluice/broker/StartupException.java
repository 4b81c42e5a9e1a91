package io.sluice.broker;

/**
 * The broker could not start. The message is one line for an operator: what could not be done, the
 * value and the configuration key involved, and why (for example "cannot listen on 127.0.0.1:7672
 * (broker.port): the address is already in use by another process"). Whatever the broker had opened
 * before it failed is closed by the time this is thrown.
 */
public final class StartupException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public StartupException(String message) {
        super(message);
    }

    public StartupException(String message, Throwable cause) {
        super(message, cause);
    }
}
