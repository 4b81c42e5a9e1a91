package io.sluice.storage.dedup;

import java.io.IOException;
import java.nio.file.Path;

/** A producer checkpoint that cannot be trusted; the message names the file and what did not check out. */
public final class CorruptProducerStateException extends IOException {
    private static final long serialVersionUID = 1L;

    public CorruptProducerStateException(Path file, String problem) {
        super("producer state file " + file + " is corrupt: " + problem);
    }
}
