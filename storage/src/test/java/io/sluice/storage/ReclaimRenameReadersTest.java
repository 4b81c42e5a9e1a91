package io.sluice.storage;

import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.segment.FileReleaser;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R1 between a reclaim pass's pick of a fully acknowledged segment and the rename of its file (docs/storage.md,
 * "Reclaim", R1 and R2): the journal's force comes between them, without the queue's lock, and a reader opened meanwhile
 * starts at the oldest unacknowledged message, which may lie in an earlier segment, and walks into the picked one. The
 * rename checks R1 again: the file stays while a reader is at or before it, and goes with the first pass after the reader
 * moved past it. The pass is paused in the journal's force through the {@link FileForcer#forcingMapped} seam; passes are
 * run by the test, on a queue without a flusher thread.
 */
class ReclaimRenameReadersTest {
    @TempDir
    Path dir;
    private final CountDownLatch forceEntered = new CountDownLatch(1);
    private final CountDownLatch forceReleased = new CountDownLatch(1);
    private volatile boolean holdForces;
    private final ExecutorService passThread = Executors.newSingleThreadExecutor();
    private FileReleaser releaser;
    private QueueStore queue;

    /** Forces as the store does, but while {@link #holdForces} a force of the ack journal waits for the test. */
    private final FileForcer forcer = new FileForcer() {
        @Override
        public void force(FileChannel channel, Path file) throws java.io.IOException {
            channel.force(false);
        }

        @Override
        public void forcingMapped(Path file) {
            if (!holdForces) {
                return;
            }
            forceEntered.countDown();
            try {
                assertTrue(forceReleased.await(30, TimeUnit.SECONDS), "the test releases the held force");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    };

    @BeforeEach
    void open() {
        releaser = new FileReleaser();
        // Segments of 1 MiB; segment 0's straggler is not relocated during the test.
        StoreConfig config = StoreConfig.builder().segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes(64 << 10)
                .durability(DurabilityMode.NEVER).relocateAfterMs(3_600_000).build();
        queue = QueueStore.open("q", dir, config, new DiskSpaceGuard(dir, 0), System::currentTimeMillis, () -> { }, null,
                releaser, forcer, false);
    }

    @AfterEach
    void close() {
        forceReleased.countDown();
        passThread.shutdownNow();
        queue.close();
        releaser.close();
    }

    private Path segmentFile(int segment) {
        return queue.segmentDirectory().resolve(SegmentFiles.fileName(segment));
    }

    @Test
    void aReaderOpenedBetweenThePickAndTheRenameKeepsThePickedSegment() throws Exception {
        List<Long> ids = new ArrayList<>();
        while (queue.segmentNumbers().size() < 3) {
            ids.add(queue.append(null, new byte[1000]));
        }
        List<Long> inSegment0 = ids.stream().filter(id -> id >>> 32 == 0).toList();
        List<Long> inSegment2 = ids.stream().filter(id -> id >>> 32 == 2).toList();
        long straggler = inSegment0.get(inSegment0.size() - 1);
        long[] acked = ids.stream().filter(id -> id >>> 32 < 2 && id != straggler).mapToLong(Long::longValue).toArray();
        queue.ackAll(acked, acked.length);

        holdForces = true;
        Future<Boolean> pass = passThread.submit(() -> queue.reclaim(System.nanoTime()));
        assertTrue(forceEntered.await(30, TimeUnit.SECONDS), "the pass picks segment 1 and forces the journal");
        QueueReader reader = queue.openReader();
        assertEquals(straggler, reader.next().id(), "the reader starts at the oldest unacknowledged message");
        assertEquals(SegmentFiles.fileName(0), reader.currentFile());
        holdForces = false;
        forceReleased.countDown();
        pass.get(30, TimeUnit.SECONDS);

        assertTrue(Files.exists(segmentFile(1)), "segment 1 is after the segment a reader is in (R1): its file stays");
        assertTrue(queue.segmentNumbers().contains(1), "and Chronicle still lists it: " + queue.segmentNumbers());

        List<Long> read = new ArrayList<>();
        for (StoredMessage m = reader.next(); m != null; m = reader.next()) {
            read.add(m.id());
        }
        assertEquals(inSegment2, read, "the reader walks through segment 1 to every message of segment 2");
        assertEquals(SegmentFiles.fileName(2), reader.currentFile());

        queue.reclaim(System.nanoTime()); // asked for by the reader moving on
        assertFalse(Files.exists(segmentFile(1)), "with the reader past it, the next pass renames segment 1");
        assertFalse(queue.segmentNumbers().contains(1), queue.segmentNumbers().toString());
        assertTrue(Files.exists(segmentFile(0)), "segment 0 keeps its unacknowledged message");
        reader.close();
    }
}
