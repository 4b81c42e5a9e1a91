package io.sluice.storage;

import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.segment.FileReleaser;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A segment file the ack state knows, deleted by someone else: recovery forgot the segment with a warning, and its
 * unacknowledged messages, confirmed, with it. The queue is refused instead, naming the file and the count, its files
 * left as they are; a segment all of whose messages were acknowledged (what reclaim deletes) is not missed. The queue
 * has no flusher, so no reclaim or relocation pass runs and the acknowledged segment's file stays until the test
 * deletes it.
 */
class MissingSegmentTest {
    @TempDir
    Path dir;
    private final ExecutorService releaserThread = Executors.newSingleThreadExecutor();
    private final FileReleaser releaser = new FileReleaser(releaserThread);

    @AfterEach
    void close() {
        releaser.close();
        releaserThread.shutdownNow();
    }

    private QueueStore open() {
        return QueueStore.open("q", dir, StoreConfig.builder()
                        .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                        .maxMessageBytes(64 << 10)
                        .durability(DurabilityMode.ALWAYS)
                        .build(),
                new DiskSpaceGuard(dir, 0), System::currentTimeMillis, () -> { }, null, releaser, FileForcer.FSYNC, false);
    }

    /**
     * Three segments (the third the write segment); every message of the first acknowledged, and of the second every
     * other one, so that it is neither reclaimable nor a relocation's source. Returns the unacknowledged ids.
     */
    private List<Long> storeMessages() {
        QueueStore queue = open();
        try {
            List<Long> ids = new ArrayList<>();
            while (queue.segmentNumbers().size() < 3) {
                ids.add(queue.append(null, new byte[8000]));
            }
            List<Integer> segments = queue.segmentNumbers();
            List<Long> unacked = new ArrayList<>();
            for (long id : ids) {
                int segment = segmentOf(id);
                boolean acked = segment == segments.get(0) || (segment == segments.get(1) && id % 2 == 0);
                if (acked) {
                    queue.ack(id);
                } else {
                    unacked.add(id);
                }
            }
            assertEquals(unacked.size(), queue.unackedMessages());
            return unacked;
        } finally {
            queue.close();
        }
    }

    private static int segmentOf(long id) {
        return (int) (id >>> 32);
    }

    private Path segmentFile(int segment) {
        return dir.resolve("segments").resolve(SegmentFiles.fileName(segment));
    }

    private static List<Long> unacked(QueueStore queue) {
        List<Long> ids = new ArrayList<>();
        queue.forEachUnacked(ids::add);
        return ids;
    }

    @Test
    void aMissingSegmentHoldingUnacknowledgedMessagesIsRefusedUntilItIsBack() throws Exception {
        List<Long> unacked = storeMessages();
        int second = segmentOf(unacked.get(0));
        long inSecond = unacked.stream().filter(id -> segmentOf(id) == second).count();
        assertTrue(inSecond > 0 && inSecond < unacked.size(), inSecond + " of " + unacked.size());
        Path file = segmentFile(second);
        byte[] content = Files.readAllBytes(file);
        Files.delete(file);
        Map<Path, String> before = FileTrees.contents(dir);

        StorageException refused = assertThrows(StorageException.class, this::open);
        String message = refused.getMessage();
        assertTrue(message.contains("queue 'q'") && message.contains(file.toString())
                && message.contains("(" + inSecond + " unacknowledged messages)"), message);
        assertEquals(before, FileTrees.contents(dir), "the refusal changes no file, byte for byte");

        Files.write(file, content);
        QueueStore queue = open();
        try {
            assertEquals(unacked.size(), queue.unackedMessages());
            assertEquals(unacked, unacked(queue));
        } finally {
            queue.close();
        }
    }

    @Test
    void aMissingSegmentWhoseMessagesWereAllAcknowledgedOpens() throws Exception {
        List<Long> unacked = storeMessages();
        int first = segmentOf(unacked.get(0)) - 1;
        Path file = segmentFile(first);
        assertTrue(Files.exists(file), "no pass reclaimed it");
        Files.delete(file);

        QueueStore queue = open();
        try {
            assertFalse(queue.segmentNumbers().contains(first));
            assertEquals(unacked, unacked(queue));
        } finally {
            queue.close();
        }
    }
}
