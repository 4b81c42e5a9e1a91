package io.sluice.storage.recovery;

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
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * A process killed between journaling a segment as reclaimed and renaming its file leaves the file on
 * disk although the ack state no longer knows the segment. Recovery must finish that delete: left
 * there, every later reclaim pass of the queue failed at it ("segment N is not live"), across
 * restarts, and nothing of the queue was reclaimed again.
 */
class ReclaimedSegmentLeftOnDiskTest {
    @TempDir
    Path dir;

    private static StoreConfig config() {
        return StoreConfig.builder().durability(DurabilityMode.NEVER).segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                .maxMessageBytes(64 << 10).reservedDiskBytes(64L << 20).build();
    }

    @Test
    void recoveryFinishesTheDeleteOfASegmentJournaledAsReclaimed() throws Exception {
        Path kept = dir.resolve("kept.cq4");
        Path segmentFile;
        try (MessageStore store = MessageStore.open(dir.resolve("data"), config())) {
            QueueStore q = store.createQueue("q");
            List<Long> ids = new ArrayList<>();
            while (q.segmentNumbers().size() < 4) {
                ids.add(q.append(null, new byte[4000]));
            }
            int first = q.segmentNumbers().get(0);
            segmentFile = q.segmentDirectory().resolve(SegmentFiles.fileName(first));
            Files.copy(segmentFile, kept);
            long[] firstSegment = ids.stream().mapToLong(Long::longValue).filter(id -> (int) (id >>> 32) == first).toArray();
            q.ackAll(firstSegment, firstSegment.length);
            until("segment " + first + " is reclaimed", () -> !q.segmentNumbers().contains(first));
        }
        // As if the process had died after journaling SEGMENT_RECLAIMED and before the rename.
        Files.copy(kept, segmentFile, StandardCopyOption.REPLACE_EXISTING);

        try (MessageStore store = MessageStore.open(dir.resolve("data"), config())) {
            QueueStore q = store.queue("q");
            // Reopened with segments and no producer checkpoint, the queue keeps them all until its owner says what its
            // producer state covers (rule R6); this one keeps none.
            q.producerStateCoveredThrough(Long.MAX_VALUE);
            assertFalse(Files.exists(segmentFile), "recovery finishes the delete the ack state records");
            int next = q.segmentNumbers().get(0);
            List<Long> ids = new ArrayList<>();
            q.forEachUnacked(id -> {
                if ((int) (id >>> 32) == next) {
                    ids.add(id);
                }
            });
            long[] nextSegment = ids.stream().mapToLong(Long::longValue).toArray();
            q.ackAll(nextSegment, nextSegment.length);
            until("reclaim goes on: segment " + next + " is reclaimed", () -> !q.segmentNumbers().contains(next));
        }
    }
}
