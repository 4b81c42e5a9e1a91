package io.sluice.storage.recovery;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.FileTrees;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.sluice.storage.Await.until;
import static io.sluice.storage.ReaderIds.readAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A process killed between journaling a segment as reclaimed and renaming its file leaves the file on
 * disk although the ack state no longer knows the segment (and a machine crash can leave it as the last segment:
 * {@link #appendsGoOnPastALastSegmentTheAckJournalRecordsAsReclaimed}). Recovery must finish that delete: left
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

    /**
     * Rule "a reclaimed last segment is not appended to" (docs/storage.md, "Recovery"): under durability {@code never} a
     * machine crash can keep the ack journal's record that segment N was reclaimed (the journal is forced in every mode)
     * and lose everything newer of the segments: segment N + 1's entry and N's rename (the segment directory is forced
     * only by a relocation's force), and N's end-of-file marker and last records (a sealed segment is never forced), N
     * itself being on disk as an earlier relocation's force left it. N is then the last segment on disk, open for appends
     * as far as Chronicle can tell, and one the ack state no longer knows. Appends used to go into it, and the ack state
     * refused every one ("segment N is not live ... it was reclaimed"): the queue could never be written again.
     */
    @Test
    void appendsGoOnPastALastSegmentTheAckJournalRecordsAsReclaimed() throws Exception {
        Path live = dir.resolve("live");
        Path image = dir.resolve("image");
        Path imageQueue = image.resolve("queues").resolve("q");
        int first;
        try (MessageStore store = MessageStore.open(live, config())) {
            QueueStore q = store.createQueue("q");
            q.producerStateCoveredThrough(Long.MAX_VALUE); // no producer state holds a segment back (R6)
            List<Long> ids = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                ids.add(q.append(null, new byte[1000]));
            }
            first = q.segmentNumbers().get(0);
            // What the disk keeps of the segments: the first as a force left it, a tenth full, nothing after.
            FileTrees.copy(q.directory(), imageQueue);
            while (q.segmentNumbers().size() < 2) {
                ids.add(q.append(null, new byte[1000]));
            }

            long[] sealed = ids.stream().mapToLong(Long::longValue).filter(id -> (int) (id >>> 32) == first).toArray();
            q.ackAll(sealed, sealed.length);
            until("segment " + first + " reclaimed", () -> !q.segmentNumbers().contains(first));
            q.whenAcksDurable(true).get(10, TimeUnit.SECONDS); // the journal, with the reclaim's record, is on disk
            // What the disk keeps of the ack state: the journal as that force left it.
            FileTrees.copy(q.directory().resolve("acks"), imageQueue.resolve("acks"));
        }

        long appended;
        try (MessageStore store = MessageStore.open(image, config())) {
            QueueStore q = store.queue("q");
            appended = q.append(null, "after the crash".getBytes(StandardCharsets.UTF_8));
            assertTrue((int) (appended >>> 32) > first, "appends go on past the reclaimed segment: 0x" + Long.toHexString(appended));
            assertEquals(1, q.unackedMessages(), "nothing of the reclaimed segment comes back");
            assertFalse(q.segmentNumbers().contains(first), "the reclaimed segment is gone: " + q.segmentNumbers());
        }
        try (MessageStore store = MessageStore.open(image, config())) {
            QueueStore q = store.queue("q");
            assertEquals(List.of(appended), readAll(q), "the message stored after the crash, and only it");
            long next = q.append(null, new byte[10]);
            assertTrue(next > appended);
        }
    }
}
