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
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A last segment cut short on disk (a backup copied part of it, a file system that lost its tail) keeps Chronicle's
 * index, near the start of the file, counting records whose bytes are gone. The queue used to open as if they were
 * there: its backlog counted them, a reader stopped for good at the first missing one, and every message appended after
 * the reopen, each of them confirmed, was stored behind that gap and never delivered, with no error anywhere. The open
 * is refused instead, naming the file and the records missing, and leaves the queue's files as they were, so that a
 * restored segment finds its ack state intact.
 */
class TruncatedSegmentTest {
    private static final int RECORDS = 1000;

    @TempDir
    Path dir;

    private static StoreConfig config() {
        return StoreConfig.builder().durability(DurabilityMode.ALWAYS).maxMessageBytes(64 << 10).reservedDiskBytes(64L << 20).build();
    }

    private static byte[] payload(int i) {
        return String.format("record-%05d-", i).concat("x".repeat(80)).getBytes(StandardCharsets.US_ASCII);
    }

    @Test
    void aLastSegmentCutShortIsRefusedAtOpenAndItsAckStateIsLeftAsItWas() throws Exception {
        Path data = dir.resolve("data");
        Path segment;
        try (MessageStore store = MessageStore.open(data, config())) {
            QueueStore q = store.createQueue("q");
            for (int i = 0; i < RECORDS; i++) {
                q.append(null, payload(i));
            }
            segment = q.segmentDirectory().resolve(SegmentFiles.fileName(q.segmentNumbers().get(0)));
        }
        long cut = offsetOf(segment, "record-00500-");
        try (RandomAccessFile file = new RandomAccessFile(segment.toFile(), "rw")) {
            file.setLength(cut);
        }
        Path acks = data.resolve("queues").resolve("q").resolve("acks");
        byte[] kept = Files.readAllBytes(segment);
        byte[] checkpoint = Files.readAllBytes(acks.resolve("acks.checkpoint"));
        byte[] journal = Files.readAllBytes(acks.resolve("acks.journal"));

        StorageException refused = assertThrows(StorageException.class, () -> {
            try (MessageStore store = MessageStore.open(data, config())) {
                store.queue("q");
            }
        });
        String message = refused.getMessage();
        assertTrue(message.contains("queue 'q'") && message.contains(segment.getFileName().toString()), message);
        assertTrue(message.contains("cannot be read") && message.contains("bin/sluice verify"), message);
        assertArrayEquals(checkpoint, Files.readAllBytes(acks.resolve("acks.checkpoint")), "the ack checkpoint is untouched");
        assertArrayEquals(journal, Files.readAllBytes(acks.resolve("acks.journal")), "the ack journal is untouched");
        // Chronicle's mapping may lengthen the file with zeros; what it held is left as it was.
        assertArrayEquals(kept, Arrays.copyOf(Files.readAllBytes(segment), kept.length), "the damaged segment's bytes are kept");
    }

    /** Where {@code marker} first occurs in {@code file} (ISO-8859-1 maps each byte to one char). */
    private static long offsetOf(Path file, String marker) throws Exception {
        int at = new String(Files.readAllBytes(file), StandardCharsets.ISO_8859_1).indexOf(marker);
        if (at < 0) {
            throw new AssertionError(marker + " not found in " + file);
        }
        return at;
    }
}
