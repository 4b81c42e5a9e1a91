package io.sluice.broker.queue;

import io.sluice.broker.TestAwait;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.dedup.ProducerCheckpoint;
import io.sluice.storage.dedup.ProducerTable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;

class ProducerRegistryTest {
    @TempDir
    Path dir;

    @Test
    void aCheckpointFollowsEveryFiftyThousandRecordsWithinASegment() throws Exception {
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().reservedDiskBytes(64L << 20).build())) {
            QueueStore queue = store.createQueue("q");
            ProducerRegistry registry = ProducerRegistry.open("q", queue, new ProducerTable(10, 60_000, 100), Runnable::run, true);
            FakeConnection connection = new FakeConnection("c");
            long id = -1;
            // The first record moves into segment 0 and takes a checkpoint; the rule takes the next.
            for (long s = 1; s <= ProducerRegistry.CHECKPOINT_EVERY_RECORDS + 1; s++) {
                id = queue.append(7, s, ByteBuffer.allocate(0), ByteBuffer.allocate(8));
                registry.stored(connection, 7, s, id);
            }
            long expected = id;
            assertEquals(0, expected >>> 32, "all in the first segment: no roll took the checkpoint");
            TestAwait.until("a checkpoint through record " + expected, Duration.ofSeconds(10),
                    () -> ProducerCheckpoint.coveredThrough(queue.directory()) == expected);
        }
    }
}
