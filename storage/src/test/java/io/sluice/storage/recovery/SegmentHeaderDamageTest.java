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
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A segment whose header is not Chronicle's (bytes written over its magic, or a file replaced by text) makes Chronicle
 * throw {@code StreamCorruptedException}, a checked exception it does not declare; it passed every
 * {@code catch (RuntimeException)} of the open up to the broker's start. The queue's open is refused with a
 * {@link StorageException} naming the queue and the file, and the file is left as it is.
 */
class SegmentHeaderDamageTest {
    @TempDir
    Path dir;

    private static StoreConfig config() {
        return StoreConfig.builder().durability(DurabilityMode.ALWAYS).reservedDiskBytes(64L << 20).segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes(64 << 10).build();
    }

    /** Writes a queue "q" with segments 0 and 1; returns its segment directory. */
    private Path twoSegments() throws Exception {
        try (MessageStore store = MessageStore.open(dir, config())) {
            QueueStore q = store.createQueue("q");
            for (int i = 0; q.segmentNumbers().size() < 2; i++) {
                q.append(null, ("message " + i + " ".repeat(60_000)).getBytes(StandardCharsets.UTF_8));
            }
            return q.segmentDirectory();
        }
    }

    @Test
    void aSegmentWhoseMagicIsOverwrittenRefusesTheQueueNamingTheFile() throws Exception {
        Path segment = twoSegments().resolve(SegmentFiles.fileName(0));
        try (RandomAccessFile file = new RandomAccessFile(segment.toFile(), "rw")) {
            file.write("JUNK".getBytes(StandardCharsets.US_ASCII));
        }
        assertRefusedNaming(segment);
    }

    @Test
    void aLaterSegmentReplacedByTextRefusesTheQueueNamingTheFile() throws Exception {
        Path segment = twoSegments().resolve(SegmentFiles.fileName(1));
        Files.writeString(segment, "garbage\n");
        assertRefusedNaming(segment);
    }

    private void assertRefusedNaming(Path segment) throws Exception {
        byte[] before = Files.readAllBytes(segment);
        StorageException refused = assertThrows(StorageException.class, () -> {
            try (MessageStore store = MessageStore.open(dir, config())) {
                store.queue("q");
            }
        });
        String expected = "queue 'q': segment file " + segment + " is damaged in its header (";
        assertEquals(expected, refused.getMessage().substring(0, Math.min(expected.length(), refused.getMessage().length())),
                refused.getMessage());
        // Left as it is, apart from the zeros Chronicle appends when it maps a file shorter than its mapping.
        byte[] after = Files.readAllBytes(segment);
        assertArrayEquals(before, Arrays.copyOf(after, before.length), "the damaged file's bytes are left as they were");
        for (int i = before.length; i < after.length; i++) {
            assertEquals(0, after[i], "byte " + i + " past the file's old end");
        }
    }
}
