package io.sluice.storage.recovery;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StorageException;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A last segment file found empty or zero-filled is what a process killed while Chronicle created it leaves, and was
 * deleted with a warning. When the ack state counts unacknowledged messages in it, they were stored, confirmed, and are
 * gone: the queue used to open without them. It is refused instead, its files left as they are; a segment all of whose
 * messages are acknowledged is still deleted, and the ids it held are not given again.
 */
class EmptiedSegmentTest {
    private static final int MESSAGES = 10;

    @TempDir
    Path dir;

    private static StoreConfig config() {
        return StoreConfig.builder().durability(DurabilityMode.ALWAYS).reservedDiskBytes(64L << 20).build();
    }

    /** Appends and closes (the close's checkpoint counts the segment's messages); returns the ids, the first {@code acked} acknowledged. */
    private List<Long> storeMessages(int acked) {
        List<Long> ids = new ArrayList<>();
        try (MessageStore store = MessageStore.open(dir, config())) {
            QueueStore q = store.createQueue("q");
            for (int i = 0; i < MESSAGES; i++) {
                ids.add(q.append(null, ("m" + i).getBytes(StandardCharsets.UTF_8)));
            }
            for (int i = 0; i < acked; i++) {
                q.ack(ids.get(i));
            }
        }
        return ids;
    }

    private Path segment() {
        return dir.resolve("queues").resolve("q").resolve("segments").resolve(SegmentFiles.fileName(0));
    }

    @Test
    void anEmptiedSegmentHoldingUnacknowledgedMessagesIsRefused() throws Exception {
        storeMessages(3);
        try (RandomAccessFile file = new RandomAccessFile(segment().toFile(), "rw")) {
            file.setLength(0);
        }
        assertRefused();
        assertEquals(0, Files.size(segment()), "the emptied file is left as it was");
    }

    @Test
    void aZeroFilledSegmentHoldingUnacknowledgedMessagesIsRefused() throws Exception {
        storeMessages(3);
        Files.write(segment(), new byte[(int) Files.size(segment())]);
        assertRefused();
        assertTrue(Files.exists(segment()), "the file is left as it was");
    }

    @Test
    void anEmptiedSegmentWhoseMessagesAreAllAcknowledgedIsDeletedAndItsIdsNotGivenAgain() throws Exception {
        List<Long> ids = storeMessages(MESSAGES);
        try (RandomAccessFile file = new RandomAccessFile(segment().toFile(), "rw")) {
            file.setLength(0);
        }
        try (MessageStore store = MessageStore.open(dir, config())) {
            QueueStore q = store.queue("q");
            assertFalse(Files.exists(segment()));
            assertEquals(0, q.unackedMessages());
            long next = q.append(null, "after".getBytes(StandardCharsets.UTF_8));
            assertTrue(next > ids.get(MESSAGES - 1), "0x" + Long.toHexString(next));
            assertFalse(q.isAcked(next));
        }
    }

    private void assertRefused() {
        StorageException refused = assertThrows(StorageException.class, () -> {
            try (MessageStore store = MessageStore.open(dir, config())) {
                store.queue("q");
            }
        });
        assertTrue(refused.getMessage().contains("queue 'q'") && refused.getMessage().contains(segment().toString())
                && refused.getMessage().contains((MESSAGES - 3) + " unacknowledged messages"), refused.getMessage());
    }
}
