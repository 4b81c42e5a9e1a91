package io.sluice.storage;

import io.sluice.storage.tool.StorageTool;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Memory-mapped files fault (SIGBUS, which the JVM raises as an InternalError) when a page has no disk
 * block behind it or the file is shorter than its mapping. Here a segment file is cut short under the
 * store's mapping, the way a full file system or an outside truncation leaves it. The thread that meets
 * the fault lives on, the queue fails safe (docs/storage.md, rule "a failed force is final"), other
 * queues go on, and the offline verifier reports the damage instead of a stack trace. A reserve too
 * small for the engine is refused at start.
 */
@Tag("mapped-fault") // in a JVM of its own (storage/pom.xml): a real SIGBUS can leave a lock anywhere held
class MappedFaultTest {
    @TempDir
    Path dir;
    private MessageStore store;

    @AfterEach
    void close() {
        if (store != null) {
            store.close();
        }
    }

    private static StoreConfig config() {
        return StoreConfig.builder().durability(DurabilityMode.ALWAYS).segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                .maxMessageBytes(64 << 10).reservedDiskBytes(64L << 20).build();
    }

    private static void cutShort(Path file, long length) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(length);
        }
    }

    @Test
    void aReserveBelowWhatTheEngineNeedsIsRefusedNamingWhatItIsFor() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> StoreConfig.builder().reservedDiskBytes(0).build());
        assertTrue(e.getMessage().contains("reservedDiskBytes 0 is below the") && e.getMessage().contains("SIGBUS"), e.getMessage());
        long minimum = StoreConfig.builder().build().minimumReservedDiskBytes();
        assertEquals(minimum, StoreConfig.builder().reservedDiskBytes(minimum).build().reservedDiskBytes());
        assertThrows(IllegalArgumentException.class, () -> StoreConfig.builder().reservedDiskBytes(minimum - 1).build());
    }

    @Test
    void aFaultingAppendFailsItsQueueSafeAndTheAppendingThreadAndOtherQueuesGoOn() throws Exception {
        store = MessageStore.open(dir, config());
        QueueStore cut = store.createQueue("cut");
        QueueStore other = store.createQueue("other");
        long first = cut.append(null, "before".getBytes(StandardCharsets.UTF_8));
        cut.whenDurable(first).get(10, TimeUnit.SECONDS);
        int segment = cut.segmentNumbers().get(0);
        cutShort(cut.segmentDirectory().resolve(io.sluice.storage.segment.SegmentFiles.fileName(segment)), 4096);

        StorageException refused = null;
        for (int i = 0; i < 200 && refused == null; i++) { // the next pages of the mapping are past the end now
            try {
                cut.append(null, new byte[8 << 10]);
            } catch (StorageException e) {
                refused = e;
            }
        }
        assertNotNull(refused, "an append into the cut-short file must fail");
        assertNotNull(cut.failure(), "the queue is failed safe, not left to fault again: " + refused);
        assertInstanceOf(StorageFailedException.class, assertThrows(StorageException.class, () -> cut.append(null, new byte[10])));
        long id = other.append(null, "fine".getBytes(StandardCharsets.UTF_8));
        assertEquals(id, other.whenDurable(id).get(10, TimeUnit.SECONDS));
        assertNull(other.failure());
    }

    @Test
    void verifyReportsASegmentCutShortAsDamageWithoutAStackTrace() throws Exception {
        store = MessageStore.open(dir, config());
        QueueStore q = store.createQueue("q");
        while (q.segmentNumbers().size() < 3) {
            q.append(null, new byte[4000]);
        }
        int sealed = q.segmentNumbers().get(0);
        store.close();
        store = null;
        cutShort(dir.resolve("queues").resolve("q").resolve("segments").resolve(io.sluice.storage.segment.SegmentFiles.fileName(sealed)),
                300_000);

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = StorageTool.run(new String[] {"verify", dir.toString()}, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        String report = out.toString(StandardCharsets.UTF_8) + err.toString(StandardCharsets.UTF_8);
        assertEquals(1, exit, report);
        assertTrue(report.contains("DAMAGE"), report);
        assertFalse(report.contains("\tat ") || report.contains("Exception in thread"), "no stack trace: " + report);
    }
}
