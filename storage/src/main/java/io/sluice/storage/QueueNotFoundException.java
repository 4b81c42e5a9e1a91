package io.sluice.storage;

/** The named queue does not exist in this store. */
public class QueueNotFoundException extends StorageException {
    private static final long serialVersionUID = 1L;

    public QueueNotFoundException(String queueName) {
        super("queue '" + queueName + "' does not exist");
    }
}
