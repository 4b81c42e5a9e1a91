package io.sluice.storage;

/** A queue name breaks the rule of {@link QueueNames}; the message says which part and why. */
public class InvalidQueueNameException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public InvalidQueueNameException(String message) {
        super(message);
    }
}
