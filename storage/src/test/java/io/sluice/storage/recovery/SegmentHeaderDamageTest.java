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
        return segments(2);
    }

    /** Writes a queue "q" with segments 0 to {@code count} - 1; returns its segment directory. */
    private Path segments(int count) throws Exception {
        try (MessageStore store = MessageStore.open(dir, config())) {
            QueueStore q = store.createQueue("q");
            for (int i = 0; q.segmentNumbers().size() < count; i++) {
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

    /**
     * A segment before the last with zeros where its first header belongs, its records intact after it: Chronicle waited
     * out its timeout at every look at it, and the queue opened about 50 s later without the segment, its unacknowledged
     * messages forgotten with a warning. Only the newest segment can be caught in its creation, so the open is refused.
     */
    @Test
    void aSegmentBeforeTheLastWithoutItsFirstHeaderRefusesTheQueueNamingTheFile() throws Exception {
        Path segment = segments(3).resolve(SegmentFiles.fileName(1));
        byte[] before = Files.readAllBytes(segment);
        try (RandomAccessFile file = new RandomAccessFile(segment.toFile(), "rw")) {
            file.writeInt(0);
        }
        StorageException refused = assertThrows(StorageException.class, () -> {
            try (MessageStore store = MessageStore.open(dir, config())) {
                store.queue("q");
            }
        });
        assertEquals("queue 'q': segment file " + segment + " has no complete first header (its first 4 bytes are 0x00000000,"
                + " where Chronicle's first header belongs), though later segments follow: its records cannot be read. The queue"
                + " is not opened and its files stay as they are; restore the queue's directory from a backup, or move it out of"
                + " the data directory to give the whole queue up", refused.getMessage());
        byte[] after = Files.readAllBytes(segment);
        Arrays.fill(before, 0, 4, (byte) 0);
        assertArrayEquals(before, after, "the file is left as it was");
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
