package io.sluice.broker.queue;

import io.sluice.broker.TestAwait;
import io.sluice.broker.log.RateLimitedLog;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.dedup.ProducerCheckpoint;
import io.sluice.storage.dedup.ProducerTable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule "a failed checkpoint is retried" (docs/storage.md, "Producer state"): a producer checkpoint that could not be
 * written is written again with a bounded backoff, with no traffic asking for it, so that the segments its keep-from
 * mark (R6) holds back go once the disk takes it. Before, the next attempt came only with the next segment entered,
 * 50,000 records, a registration or the shutdown: on a queue gone quiet, fully acknowledged segments stayed on disk.
 */
class ProducerCheckpointRetryTest {
    @TempDir
    Path dir;
    private MessageStore store;
    private QueueStore queue;
    private ScheduledExecutorService queueThread;
    private ExecutorService writer;

    @BeforeEach
    void open() {
        store = MessageStore.open(dir, StoreConfig.builder().reservedDiskBytes(64L << 20).segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                .maxMessageBytes(128 << 10).build());
        queue = store.createQueue("q");
        queueThread = Executors.newSingleThreadScheduledExecutor(r -> new Thread(r, "test-queue-thread"));
        writer = Executors.newSingleThreadExecutor(r -> new Thread(r, "test-producer-state"));
    }

    @AfterEach
    void close() throws InterruptedException {
        store.close();
        queueThread.shutdownNow();
        writer.shutdownNow();
        assertTrue(queueThread.awaitTermination(10, TimeUnit.SECONDS));
        assertTrue(writer.awaitTermination(10, TimeUnit.SECONDS));
    }

    private <T> T onQueueThread(Callable<T> task) throws Exception {
        return queueThread.submit(task).get(10, TimeUnit.SECONDS);
    }

    @Test
    void aFailedCheckpointIsWrittenAgainWithoutTrafficAndTheSegmentsItHeldGo() throws Exception {
        ProducerRegistry registry = onQueueThread(() -> ProducerRegistry.open("q", queue, new ProducerTable(10, 60_000, 100),
                queueThread, writer, (task, delayMillis) -> queueThread.schedule(task, delayMillis, TimeUnit.MILLISECONDS), true,
                RateLimitedLog.standard("producer checkpoints")));
        // A directory that is not empty where the checkpoint's temporary file goes: every write fails.
        Path blocker = queue.directory().resolve(ProducerCheckpoint.FILE + ".tmp");
        Files.createDirectories(blocker.resolve("blocker"));

        FakeConnection connection = new FakeConnection("c");
        long last = -1;
        for (long s = 1; queue.segmentNumbers().size() < 3; s++) { // each move into a new segment takes a checkpoint
            long sequence = s;
            last = onQueueThread(() -> {
                long id = queue.append(7, sequence, ByteBuffer.allocate(0), ByteBuffer.allocate(64 << 10));
                registry.stored(connection, 7, sequence, id, 0);
                return id;
            });
        }
        long lastId = last;
        // Every checkpoint asked for so far has failed once this one has (it covers the last record).
        CompletableFuture<Void> lastAttempt = onQueueThread(registry::checkpoint);
        assertThrows(ExecutionException.class, () -> lastAttempt.get(20, TimeUnit.SECONDS));
        List<Integer> segments = queue.segmentNumbers();
        queue.ackRange(0, lastId);
        assertEquals(segments, queue.segmentNumbers(), "the acknowledged segments are held: no checkpoint covers them (R6)");

        Files.delete(blocker.resolve("blocker"));
        Files.deleteIfExists(blocker); // a retry may have taken the empty directory's place already
        // No append, registration or shutdown from here on: only the retry can write the checkpoint.
        TestAwait.until("a checkpoint through record " + lastId, () -> ProducerCheckpoint.coveredThrough(queue.directory()) == lastId);
        List<Integer> written = List.of(segments.get(segments.size() - 1));
        TestAwait.until("segments " + segments.subList(0, segments.size() - 1) + " reclaimed",
                () -> queue.segmentNumbers().equals(written));
        long failures = registry.checkpointFailures();
        assertTrue(failures >= 1, "every failed attempt is counted: " + failures);
        assertEquals(failures, registry.checkpointFailures(), "no attempt fails once one succeeded");
        assertTrue(!onQueueThread(registry::changedSinceCheckpoint), "the table stands on disk as it is");
    }
}
