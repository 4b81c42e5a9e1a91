package io.sluice.storage;

/**
 * A queue could not open a file it needs because the process has as many files open as its open-file
 * limit ({@code RLIMIT_NOFILE}) allows. The operation was refused and nothing of it is confirmed;
 * the queue is not failed, the other queues are not affected, and the same operation succeeds once
 * descriptors are free again or the limit is raised. The message names the file, the limit and the
 * remedy; the broker answers producers with "resource limit".
 */
public class StorageFilesExhaustedException extends StorageException {
    private static final long serialVersionUID = 1L;

    public StorageFilesExhaustedException(String message, Throwable cause) {
        super(message, cause);
    }
}
