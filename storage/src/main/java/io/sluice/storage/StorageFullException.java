package io.sluice.storage;

/**
 * An append was refused because free disk space is below the reserved margin. Nothing was written;
 * stored data is intact, and appends work again once space returns (for example after consumers
 * acknowledge and segments are reclaimed). The broker turns this into "storage full" for producers.
 */
public class StorageFullException extends StorageException {
    private static final long serialVersionUID = 1L;

    public StorageFullException(String message) {
        super(message);
    }
}
