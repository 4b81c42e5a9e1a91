package io.sluice.storage;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A store whose open fails after it took {@code store.lock} lets the lock and its descriptor go: an application that
 * retries the open in the same process once the cause is fixed gets the store, not "in use by another store" from its
 * own failed attempt.
 */
class FailedStoreOpenLockTest {
    @TempDir
    Path temp;

    @Test
    void anOpenRefusedForItsCleanShutdownMarkReleasesTheLockForTheNextOpen() throws Exception {
        Path data = temp.resolve("data");
        StoreConfig config = StoreConfig.builder().reservedDiskBytes(64L << 20).build();
        try (MessageStore store = MessageStore.open(data, config)) {
            QueueStore q = store.createQueue("q");
            q.whenDurable(q.append(new byte[0], "m".getBytes(StandardCharsets.UTF_8))).get();
        }
        // Fault injection: a mark that cannot be read or removed, which refuses the store after its lock is taken.
        Path mark = CleanShutdownMark.file(data);
        Files.delete(mark);
        Files.createDirectories(mark.resolve("entry"));

        RuntimeException refused = assertThrows(RuntimeException.class, () -> MessageStore.open(data, config));
        assertTrue(String.valueOf(refused.getMessage()).contains("cannot open data directory " + data), "refused: " + refused);
        assertEquals(List.of(), OpenFiles.descriptorsUnder(data), "descriptors of the data directory left by the failed open");

        Files.delete(mark.resolve("entry"));
        Files.delete(mark);
        try (MessageStore store = MessageStore.open(data, config)) {
            assertEquals(1, store.queue("q").unackedMessages());
        }
    }
}
