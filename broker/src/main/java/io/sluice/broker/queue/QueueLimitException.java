package io.sluice.broker.queue;

/** A declare that would bring the queue count above {@code limits.max-queues}; answered RESOURCE_LIMIT. */
public final class QueueLimitException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public QueueLimitException(String message) {
        super(message, null, false, false);
    }
}
