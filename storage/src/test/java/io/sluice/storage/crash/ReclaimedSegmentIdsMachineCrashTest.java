package io.sluice.storage.crash;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

import static io.sluice.storage.Await.until;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Under durability {@code never}, a segment created after the last ack checkpoint, fully acknowledged and reclaimed: its
 * rename reaches the disk (a delete or rename counts as durable at once, {@link ForcedDiskImage}), the journal's records
 * of its acks and its reclaim do not (the journal is forced on its interval, a minute here), and the write segment after
 * it is there by name only, zeros (never forced, never written back). Nothing on that disk says the reclaimed segment
 * existed. Its ids must still not be given again (rule "ids are never reused").
 */
class ReclaimedSegmentIdsMachineCrashTest {
    @TempDir
    Path temp;

    private static StoreConfig config() {
        return StoreConfig.builder().durability(DurabilityMode.NEVER).syncIntervalMs(60_000)
                .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes(64 << 10).reservedDiskBytes(64L << 20).build();
    }

    @Test
    void theIdsOfASegmentReclaimedBeforeAMachineCrashAreNotGivenAgain() throws Exception {
        Path data = temp.resolve("data");
        Path image = temp.resolve("image");
        ForcedDiskImage disk = new ForcedDiskImage(data);
        long lastOfReclaimed;
        try (MessageStore store = MessageStore.open(data, config(), disk)) {
            QueueStore q = store.createQueue("q");
            q.producerStateCoveredThrough(Long.MAX_VALUE); // no producer state holds a segment back (R6)
            List<Long> ids = new ArrayList<>();
            while (q.segmentNumbers().size() < 3) {
                ids.add(q.append(null, new byte[4000]));
            }
            long[] second = ids.stream().mapToLong(Long::longValue).filter(id -> (int) (id >>> 32) == 1).toArray();
            lastOfReclaimed = second[second.length - 1];
            q.ackAll(second, second.length);
            until("segment 1 reclaimed", () -> !q.segmentNumbers().contains(1));

            disk.build(image); // the power fails here
            // What the OS wrote back on its own: segment 0 and Chronicle's metadata; segment 2 by name only.
            Path segments = q.segmentDirectory();
            Path imaged = image.resolve("queues").resolve("q").resolve("segments");
            Files.copy(segments.resolve(SegmentFiles.fileName(0)), imaged.resolve(SegmentFiles.fileName(0)));
            Files.copy(segments.resolve("metadata.cq4t"), imaged.resolve("metadata.cq4t"),
                    StandardCopyOption.REPLACE_EXISTING);
            Files.write(imaged.resolve(SegmentFiles.fileName(2)), new byte[(int) Files.size(segments.resolve(SegmentFiles.fileName(2)))]);
        }
        try (MessageStore store = MessageStore.open(image, config())) {
            long next = store.queue("q").append(null, new byte[10]);
            assertTrue(next > lastOfReclaimed, "the first append after the crash got 0x" + Long.toHexString(next)
                    + ", an id the reclaimed segment held (up to 0x" + Long.toHexString(lastOfReclaimed) + ")");
        }
    }
}
