package io.sluice.storage;

/** An append was refused because its headers plus payload exceed {@link StoreConfig#maxMessageBytes()}. Nothing was written. */
public class MessageTooLargeException extends StorageException {
    private static final long serialVersionUID = 1L;

    public MessageTooLargeException(String message) {
        super(message);
    }
}
