package io.sluice.storage;

/**
 * A queue's storage failed: a force to disk, or a write or read through a mapping, did not succeed.
 * The failure is final for the queue until the store is reopened (docs/storage.md, rule "a failed
 * force is final"): what was not yet durable is never confirmed, and appends are refused. A producer
 * may publish again after the operator restarts the broker.
 */
public class StorageFailedException extends StorageException {
    public StorageFailedException(String message, Throwable cause) {
        super(message, cause);
    }
}
