package io.sluice.storage.segment;

import io.sluice.storage.StorageException;

import java.nio.file.Path;

/**
 * An access to a memory-mapped segment raised a fault (the JVM's {@link InternalError} for a SIGBUS:
 * a page with no disk block behind it, or a file cut short under its mapping). The message names the
 * file. The queue's storage is failed by whoever catches it (docs/storage.md, "Disk full").
 */
public final class MappedFileFaultException extends StorageException {
    private static final long serialVersionUID = 1L;

    public MappedFileFaultException(String what, Path file, InternalError cause) {
        super(what + " of " + file + " faulted (" + cause.getMessage() + "): the page has no disk block behind it or the file "
                + "was cut short", cause);
    }
}
