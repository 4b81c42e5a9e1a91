package io.sluice.storage.ack;

import java.io.IOException;
import java.nio.file.Path;

/**
 * An ack checkpoint or journal header that cannot be trusted. The message names the file and the
 * byte offset where reading went wrong, so an operator can inspect (and keep) the file.
 */
public final class CorruptAckStateException extends IOException {
    private static final long serialVersionUID = 1L;

    private final transient Path file;
    private final long offset;

    public CorruptAckStateException(Path file, long offset, String problem) {
        super("ack state file " + file + " is corrupt at offset " + offset + ": " + problem);
        this.file = file;
        this.offset = offset;
    }

    public Path file() {
        return file;
    }

    public long offset() {
        return offset;
    }
}
