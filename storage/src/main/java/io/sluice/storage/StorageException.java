package io.sluice.storage;

/** A storage operation failed; the message names what was wrong. Subclasses say which kind of failure. */
public class StorageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public StorageException(String message) {
        super(message);
    }

    public StorageException(String message, Throwable cause) {
        super(message, cause);
    }
}
