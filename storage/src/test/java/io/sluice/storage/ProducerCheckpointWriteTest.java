package io.sluice.storage;

import io.sluice.storage.dedup.ProducerCheckpoint;
import io.sluice.storage.dedup.ProducerTable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A producer checkpoint written late, after its queue was deleted and a queue of the same name
 * declared again, would hand the old producers' sequences to the new queue, whose first publishes
 * would then be confirmed unstored: the store refuses the write once it is closing.
 */
class ProducerCheckpointWriteTest {
    @TempDir
    Path dir;

    @Test
    void aDeletedQueuesStoreWritesNoCheckpointIntoItsSuccessor() throws Exception {
        ProducerTable table = new ProducerTable(10, 60_000, 100);
        table.stored(7, 0, 1, 0);
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().reservedDiskBytes(64L << 20).build())) {
            QueueStore old = store.createQueue("q");
            old.writeProducerCheckpoint(ProducerCheckpoint.encode(table, -1));
            assertTrue(Files.exists(ProducerCheckpoint.file(old.directory())));

            store.deleteQueue("q");
            QueueStore successor = store.createQueue("q");
            assertEquals(old.directory(), successor.directory());
            StorageException refused = assertThrows(StorageException.class,
                    () -> old.writeProducerCheckpoint(ProducerCheckpoint.encode(table, -1)));
            assertTrue(refused.getMessage().contains("closed"), refused.getMessage());
            assertFalse(Files.exists(ProducerCheckpoint.file(successor.directory())),
                    "the old queue's producers are not the new queue's");
        }
    }
}
