package io.sluice.storage.crash;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.FileTrees;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.ReaderIds;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * An open defect (docs/storage.md, "Recovery", "A sealed segment without its end marker"): a sealed segment
 * that is not the last and lacks Chronicle's end-of-cycle marker, because its records reached the disk and the marker
 * the roll wrote after them did not while the next segment's records did (the OS writes pages back in no order the
 * store chooses: under {@code never} nothing is forced, and under any mode the next segment's pages may be written
 * back before the flusher's force of the sealed one). What this test expects once the defect is fixed: a reader
 * opened after the restart reads on into the next segment, every message on the disk is delivered, and so is one
 * appended after the restart, which the broker confirms. Today the reader stops at the sealed segment's end.
 */
class SegmentWithoutEndMarkerMachineCrashTest {
    @TempDir
    Path temp;

    private static StoreConfig config() {
        return StoreConfig.builder().durability(DurabilityMode.NEVER).syncIntervalMs(60_000)
                .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes(64 << 10).reservedDiskBytes(64L << 20).build();
    }

    private static byte[] payload(long n) {
        return String.format("%04000d", n).getBytes(StandardCharsets.US_ASCII);
    }

    /** How many of these appends the first segment holds: the appends after them roll. */
    private static int firstSegmentRecords(Path data) {
        try (MessageStore store = MessageStore.open(data, config())) {
            QueueStore q = store.createQueue("q");
            int n = 0;
            while (q.segmentNumbers().size() < 2) {
                q.append(null, payload(n++));
            }
            return n - 1;
        }
    }

    @Test
    @Disabled("stranded on today's code: the reader opened before any append reads the first segment only. The fix tried, "
            + "writing the missing markers at open, wrote markers after kill -9 too and stranded a message in "
            + "CrashRecoveryTest (seed 80332604300565); see docs/storage.md")
    void messagesAfterASegmentWithoutItsEndMarkerAreDeliveredAfterAMachineCrash() throws Exception {
        int firstSegment = firstSegmentRecords(temp.resolve("count"));
        Path data = temp.resolve("data");
        Path image = temp.resolve("image");
        Path imagedFirst = image.resolve("queues/q/segments").resolve(SegmentFiles.fileName(0));
        List<Long> stored = new ArrayList<>();
        try (MessageStore store = MessageStore.open(data, config())) {
            QueueStore q = store.createQueue("q");
            for (int n = 0; n < firstSegment; n++) {
                stored.add(q.append(null, payload(n)));
            }
            Path first = q.segmentDirectory().resolve(SegmentFiles.fileName(0));
            byte[] beforeTheRoll = Files.readAllBytes(first); // every record, and no end marker yet
            for (int n = firstSegment; n < firstSegment + 20; n++) {
                stored.add(q.append(null, payload(n)));
            }
            assertEquals(List.of(0, 1), q.segmentNumbers());
            assertFalse(Arrays.equals(beforeTheRoll, Files.readAllBytes(first)), "the roll wrote the end marker");

            // The power fails: the first segment as written back before the roll, the rest as it is.
            FileTrees.copy(data, image);
            Files.write(imagedFirst, beforeTheRoll);
        }
        try (MessageStore store = MessageStore.open(image, config())) {
            QueueStore q = store.queue("q");
            assertEquals(stored, ReaderIds.readAll(q), "a reader opened before any append reads past the first segment");
            stored.add(q.append(null, payload(firstSegment + 20)));
            assertEquals(stored, ReaderIds.readAll(q), "and so does one opened after an append");
        }
    }
}
