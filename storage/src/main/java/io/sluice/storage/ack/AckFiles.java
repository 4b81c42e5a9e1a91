package io.sluice.storage.ack;

import io.sluice.storage.files.AtomicFiles;

import java.nio.file.Path;

/** File names shared by the checkpoint and the journal. Stateless. */
public final class AckFiles {
    public static final String CHECKPOINT = "acks.checkpoint";
    public static final String JOURNAL = "acks.journal";

    private AckFiles() {
    }

    /** The name a checkpoint or journal is written under before it is renamed into place. */
    static Path temporary(Path file) {
        return AtomicFiles.temporary(file);
    }
}
