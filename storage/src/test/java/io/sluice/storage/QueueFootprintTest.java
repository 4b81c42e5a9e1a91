package io.sluice.storage;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a queue that holds almost nothing costs on disk: allocated blocks as {@code stat} counts them
 * (a sparse file costs only the blocks written), not file sizes. Issue 14, section 3: 1,000 such
 * queues cost 8.2 GB while the ack journal was allocated at its full 8 MiB.
 */
class QueueFootprintTest {
    private static final long ONE_MIB = 1 << 20;

    @TempDir
    Path dir;

    @Test
    void anIdleQueueUsesUnderOneMebibyteOfAllocatedDisk() {
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().build())) {
            QueueStore queue = store.createQueue("idle");
            for (int i = 0; i < 10; i++) {
                long id = queue.append(null, ("message " + i).getBytes(StandardCharsets.UTF_8));
                queue.recordDelivery(id, 1);
                queue.ack(id);
            }
            assertUnderOneMebibyte(queue, "with 10 messages delivered and acknowledged");
        }
    }

    @Test
    void anIdleQueueStaysUnderOneMebibyteAfterARestart() {
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().build())) {
            store.createQueue("idle").append(null, "one".getBytes(StandardCharsets.UTF_8));
        }
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().build())) {
            QueueStore queue = store.queue("idle");
            assertEquals(1, queue.unackedMessages());
            assertUnderOneMebibyte(queue, "after a restart");
        }
    }

    private static void assertUnderOneMebibyte(QueueStore queue, String when) {
        long allocated = DiskUsage.allocatedBytesUnder(queue.directory());
        assertTrue(allocated < ONE_MIB, "queue directory " + queue.directory() + " has " + allocated + " bytes allocated "
                + when + ", the limit for an idle queue is " + ONE_MIB + "; files: " + DiskUsage.describe(queue.directory()));
    }

    @Test
    void aBusyQueuesJournalGrowsInsteadOfRotatingWhileTheDiskHasRoom() throws IOException {
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().build())) {
            assertJournalGrowsOnce(store.createQueue("busy"));
        }
    }

    private static void assertJournalGrowsOnce(QueueStore queue) throws IOException {
        Path journal = queue.directory().resolve("acks").resolve("acks.journal");
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < 8000; i++) {
            ids.add(queue.append(null, ("m" + i).getBytes(StandardCharsets.UTF_8)));
        }
        for (int i = 0; i < ids.size(); i += 2) {
            queue.ack(ids.get(i)); // one ACK_RANGE record of 21 bytes each: 84,000 bytes in all
        }
        assertEquals(128 << 10, Files.size(journal), "the 64 KiB journal doubled once");
        assertEquals(128 << 10, DiskUsage.allocatedBytes(journal), "and its new half is written, not sparse");
        assertEquals(4000, queue.unackedMessages());
    }
}
