package io.sluice.storage;

import io.sluice.storage.ack.AckFiles;
import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.segment.FileReleaser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A queue whose close cannot write the ack state's checkpoint still closes its ack journal: the checkpoint's failure
 * is logged, and the journal's mapping is released as on any close. Before, the failed checkpoint skipped the
 * journal's close, so a store that closed that way (a broker shutting down on a full or failing disk, a queue deleted
 * meanwhile) kept the journal mapped for the life of the process.
 *
 * <p>The checkpoint fails because a non-empty directory stands where its temporary file goes.
 */
class CloseAfterFailedCheckpointTest {
    @TempDir
    Path dir;

    @Test
    void aCloseWhoseCheckpointFailsStillUnmapsTheAckJournal() throws IOException {
        try (FileReleaser releaser = new FileReleaser()) {
            QueueStore queue = QueueStore.open("q", dir, StoreConfig.builder().build(), new DiskSpaceGuard(dir, 0),
                    System::currentTimeMillis, () -> { }, null, releaser, FileForcer.FSYNC, false);
            queue.ack(queue.append(null, new byte[100]));
            Path journal = dir.resolve("acks").resolve(AckFiles.JOURNAL).toRealPath();
            assertTrue(mapped(journal), "the open queue maps its journal");

            Files.createDirectories(dir.resolve("acks").resolve(AckFiles.CHECKPOINT + ".tmp").resolve("blocker"));
            queue.close();

            assertFalse(mapped(journal), "the journal is unmapped although the close's checkpoint failed");
        }
    }

    private static boolean mapped(Path file) throws IOException {
        return Files.readAllLines(Path.of("/proc/self/maps")).stream().anyMatch(line -> line.endsWith(" " + file));
    }
}
