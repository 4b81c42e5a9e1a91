package io.sluice.storage;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.sluice.storage.ack.AckCheckpoint;
import io.sluice.storage.ack.AckFiles;
import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.segment.FileReleaser;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import static io.sluice.storage.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An I/O failure writing a queue's ack state fails the queue's storage (docs/storage.md, the table's
 * {@code AckUpdates}; rule "a failed force is final"), whether an ack or a reclaim pass wrote it: the
 * change is in memory only. The queue then reports the failure (the metric and health read it), refuses
 * appends and fails {@code whenAcksDurable}, naming itself. Before, the failure only reached the caller
 * (and, from reclaim, the log) and the queue went on as if nothing had failed.
 *
 * <p>The failure is a rotation's checkpoint that cannot be written: a non-empty directory stands where
 * its temporary file goes. The queue runs without a flusher; the test runs its reclaim passes.
 */
class AckStateFailureTest {
    private static final int JOURNAL_BYTES = 4096;

    @TempDir
    Path dir;
    private FileReleaser releaser;
    private QueueStore queue;
    private Path blocker;

    @BeforeEach
    void open() {
        releaser = new FileReleaser();
        queue = QueueStore.open("q", dir, StoreConfig.builder()
                        .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                        .maxMessageBytes(64 << 10)
                        .ackJournalBytes(JOURNAL_BYTES)
                        .build(),
                new DiskSpaceGuard(dir, 0), System::currentTimeMillis, () -> { }, null, releaser, FileForcer.FSYNC, false);
        blocker = dir.resolve("acks").resolve(AckFiles.CHECKPOINT + ".tmp");
    }

    @AfterEach
    void close() {
        Directories.deleteRecursively(blocker); // so that the close's checkpoint is written
        queue.close();
        releaser.close();
    }

    @Test
    void aRotationThatFailsOnTheAckPathFailsTheQueuesStorage() throws Exception {
        List<Long> ids = appendSegments(0);
        blockCheckpoints();
        // 4,064 bytes of journal hold 193 acks of 21 bytes: one of the next ones rotates it.
        UncheckedIOException thrown = null;
        for (int i = 0; i < 200 && thrown == null; i++) {
            long id = ids.get(2 * i); // one record each
            try {
                queue.ack(id);
            } catch (UncheckedIOException e) {
                thrown = e;
            }
        }
        assertNotNull(thrown, "the journal rotated");
        assertFailed();
    }

    @Test
    void aRotationThatFailsInAReclaimPassFailsTheQueuesStorage() throws Exception {
        List<Long> ids = appendSegments(1);
        int first = queue.segmentNumbers().get(0);
        long[] sealed = ids.stream().mapToLong(Long::longValue).filter(id -> (int) (id >>> 32) == first).toArray();
        assertTrue(sealed.length > 200, "segment of " + sealed.length + " messages");
        long generation = checkpointGeneration();
        // After its 32-byte header, 3 deliveries of 17 bytes and 191 acks of 21 leave the journal 2 bytes:
        // the reclaim pass's record of the segment it deletes (9 bytes) rotates it.
        for (int i = 0; i < 3; i++) {
            queue.recordDelivery(sealed[i], 1);
        }
        for (int i = 0; i < 190; i++) {
            queue.ack(sealed[i]);
        }
        queue.ackRange(sealed[190], sealed[sealed.length - 1]);
        assertEquals(generation, checkpointGeneration(), "no rotation before the pass");

        blockCheckpoints();
        assertThrows(UncheckedIOException.class, () -> queue.reclaim(System.nanoTime()));
        assertFailed();
    }

    /** Appends messages of 1,000 bytes until {@code sealed} segments are sealed; returns their ids. */
    private List<Long> appendSegments(int sealed) {
        List<Long> ids = new ArrayList<>();
        while (queue.segmentNumbers().size() <= sealed || ids.size() < 500) {
            ids.add(queue.append(null, new byte[1000]));
        }
        return ids;
    }

    private void blockCheckpoints() throws IOException {
        Files.createDirectories(blocker.resolve("blocker"));
    }

    private long checkpointGeneration() throws IOException {
        return AckCheckpoint.read(dir.resolve("acks").resolve(AckFiles.CHECKPOINT)).generation();
    }

    private void assertFailed() throws Exception {
        StorageFailedException failure = queue.failure();
        assertNotNull(failure, "the queue's storage is failed");
        assertTrue(failure.getMessage().contains("queue 'q'"), failure.getMessage());
        StorageFailedException refused = assertThrows(StorageFailedException.class, () -> queue.append(null, new byte[10]));
        assertTrue(refused.getMessage().contains("queue 'q'"), refused.getMessage());
        CompletableFuture<Void> acks = queue.whenAcksDurable(true);
        assertTrue(acks.isCompletedExceptionally(), "nothing more is reported durable");
        ExecutionException notDurable = assertThrows(ExecutionException.class, acks::get);
        assertInstanceOf(StorageFailedException.class, notDurable.getCause());
    }

    /**
     * Rule "a failing pass is counted, and logged sparingly" (docs/storage.md, "Reclaim"): the flusher's passes over a
     * queue whose ack state cannot be written fail every time (each would journal the segment it deletes). They are
     * tried again by the periodic pass, each failure counted, and logged once, not at every pass.
     */
    @Test
    void aReclaimPassThatFailsEveryTimeIsCountedAndLoggedOnceNotAtEveryPass() throws Exception {
        Logger storageLog = (Logger) LoggerFactory.getLogger("io.sluice.storage");
        ListAppender<ILoggingEvent> logged = new ListAppender<>();
        logged.start();
        storageLog.addAppender(logged);
        Path data = dir.resolve("store");
        try (MessageStore store = MessageStore.open(data, StoreConfig.builder().segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                .maxMessageBytes(64 << 10).ackJournalBytes(JOURNAL_BYTES).reservedDiskBytes(64L << 20).build())) {
            QueueStore q = store.createQueue("q");
            List<Long> ids = new ArrayList<>();
            while (q.segmentNumbers().size() <= 1 || ids.size() < 500) {
                ids.add(q.append(null, new byte[1000]));
            }
            int first = q.segmentNumbers().get(0);
            long[] sealed = ids.stream().mapToLong(Long::longValue).filter(id -> (int) (id >>> 32) == first).toArray();
            // As above: the journal keeps 2 bytes after these, so the pass's record of the segment it deletes rotates it.
            for (int i = 0; i < 3; i++) {
                q.recordDelivery(sealed[i], 1);
            }
            for (int i = 0; i < 190; i++) {
                q.ack(sealed[i]);
            }
            Files.createDirectories(q.directory().resolve("acks").resolve(AckFiles.CHECKPOINT + ".tmp").resolve("blocker"));
            q.ackRange(sealed[190], sealed[sealed.length - 1]); // asks for the pass that fails

            until("five failed passes", () -> q.stats().failedReclaimPasses() >= 5);
            assertNotNull(q.failure(), "the ack state's failure failed the queue");
            assertTrue(q.segmentNumbers().contains(first), "the segment stays: its deletion could not be journaled");
            List<String> errors = logged.list.stream().filter(e -> e.getLevel() == Level.ERROR)
                    .map(ILoggingEvent::getFormattedMessage).filter(m -> m.contains("Reclaim of queue 'q'")).toList();
            assertEquals(1, errors.size(), q.stats().failedReclaimPasses() + " failed passes, logged: " + errors);
            Directories.deleteRecursively(q.directory().resolve("acks").resolve(AckFiles.CHECKPOINT + ".tmp"));
        } finally {
            storageLog.detachAppender(logged);
        }
    }
}
