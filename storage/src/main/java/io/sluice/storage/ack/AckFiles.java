package io.sluice.storage.ack;

import io.sluice.storage.files.AtomicFiles;

import java.io.IOException;
import java.nio.file.Path;

/** File names and the directory fsync shared by the checkpoint and the journal. Stateless. */
public final class AckFiles {
    public static final String CHECKPOINT = "acks.checkpoint";
    public static final String JOURNAL = "acks.journal";

    private AckFiles() {
    }

    /** The name a checkpoint or journal is written under before it is renamed into place. */
    static Path temporary(Path file) {
        return AtomicFiles.temporary(file);
    }

    /**
     * Makes a rename in {@code directory} durable: without it a machine crash can bring back the old
     * directory entry even though the renamed file's data was fsynced.
     */
    public static void fsyncDirectory(Path directory) throws IOException {
        AtomicFiles.fsyncDirectory(directory);
    }
}
