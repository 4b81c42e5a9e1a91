package io.sluice.storage.recovery;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueReader;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StorageException;
import io.sluice.storage.StoreConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Chronicle's {@code metadata.cq4t} that is not Chronicle's (text, zeros): the queue's open waited out Chronicle's
 * timeout twice (20 s) and failed with "Unable to claim exclusive exclusive lock on file ...", as if another process held
 * it; a file of zeros was written over (a header of the wrong kind) and refused with "Expected SCQMeta". The open is
 * refused at once, naming the file and what is wrong with it, and the file is left as it is. It holds no message: moved
 * aside, the queue opens with every message and goes on appending.
 */
class MetadataDamageTest {
    private static final int MESSAGES = 20;

    @TempDir
    Path dir;

    private static StoreConfig config() {
        return StoreConfig.builder().durability(DurabilityMode.ALWAYS).reservedDiskBytes(64L << 20)
                .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes(64 << 10).build();
    }

    /** Writes a queue "q" of MESSAGES messages over two segments; returns its metadata file. */
    private Path queueOfTwoSegments() {
        try (MessageStore store = MessageStore.open(dir, config())) {
            QueueStore q = store.createQueue("q");
            for (int i = 0; i < MESSAGES; i++) {
                q.append(null, ("message " + i + " ".repeat(60_000)).getBytes(StandardCharsets.UTF_8));
            }
            assertEquals(2, q.segmentNumbers().size());
            return q.segmentDirectory().resolve("metadata.cq4t");
        }
    }

    @Test
    void aMetadataFileOfTextRefusesTheQueueNamingItAndLeavesIt() throws Exception {
        Path metadata = queueOfTwoSegments();
        Files.writeString(metadata, "garbage\n");
        assertRefused(metadata, "is damaged in its header (unexpected magic 0x62726167 where Chronicle's first header belongs)");
    }

    @Test
    void aMetadataFileOfZerosRefusesTheQueueNamingItAndLeavesIt() throws Exception {
        Path metadata = queueOfTwoSegments();
        Files.write(metadata, new byte[(int) Files.size(metadata)]);
        assertRefused(metadata, "has no complete first header (its first 4 bytes are 0x00000000, where Chronicle's first header"
                + " belongs)");
    }

    private void assertRefused(Path metadata, String what) throws Exception {
        byte[] before = Files.readAllBytes(metadata);
        StorageException refused = assertThrows(StorageException.class, () -> {
            try (MessageStore store = MessageStore.open(dir, config())) {
                store.queue("q");
            }
        });
        assertEquals("queue 'q': Chronicle's metadata file " + metadata + " " + what + ". The queue is not opened and its files"
                + " stay as they are; the file holds no message (Chronicle's locks and its list of the segment files): moved out"
                + " of the segment directory, it is made again at the next start", refused.getMessage());
        assertArrayEquals(before, Files.readAllBytes(metadata), "the damaged file is left as it was");

        Files.move(metadata, dir.resolve("metadata.cq4t.damaged"));
        try (MessageStore store = MessageStore.open(dir, config())) {
            QueueStore q = store.queue("q");
            long appended = q.append(null, "after".getBytes(StandardCharsets.UTF_8));
            int read = 0;
            try (QueueReader reader = q.openReader()) {
                for (io.sluice.storage.StoredMessage message = reader.next(); message != null; message = reader.next()) {
                    assertTrue(new String(message.payloadBytes(), StandardCharsets.UTF_8).startsWith(
                            read < MESSAGES ? "message " + read + " " : "after"), "message " + read);
                    read++;
                }
            }
            assertEquals(MESSAGES + 1, read, "every message, and the one appended after");
            assertEquals(1, appended >>> 32, "appended in the last segment, as before");
        }
    }
}
