package io.sluice.broker.txn;

import io.sluice.broker.TestAwait;
import io.sluice.storage.DurabilityMode;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.durability.FileForcer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The transaction log is a queue that no producer registry owns: it keeps no producer state, so rule R6
 * (docs/storage.md, "Reclaim") must hold none of its segments back. A queue reopened with segments and no
 * producer checkpoint keeps every one of them until its owner says what its producer state covers; had the
 * log not said so, it would have kept every segment after its first restart, for good. The test waits until one
 * segment file is left, the one being written (rule R1 keeps it): a count, not a segment named after the finishing
 * acks, so a pass that reclaims before the test first looks cannot leave it waiting for a segment that never goes
 * (DedupOffReclaimTest's race).
 */
class TransactionLogReclaimTest {
    @TempDir
    Path dir;

    private static StoreConfig config() {
        return StoreConfig.builder().durability(DurabilityMode.NEVER).segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                .maxMessageBytes(64 << 10).build();
    }

    private long segmentFiles() {
        try (Stream<Path> files = Files.list(dir.resolve(TransactionLog.DIRECTORY).resolve("queues")
                .resolve(TransactionLog.LOG_NAME).resolve("segments"))) {
            return files.filter(p -> p.getFileName().toString().endsWith(".cq4")).count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void theLogsFinishedSegmentsAreReclaimedAfterARestart() throws Exception {
        CommitRecord record = new CommitRecord(List.of(new CommitRecord.Part("q", 1, new long[2000])), List.of());
        long transactions = 0;
        try (TransactionLog log = TransactionLog.open(dir, config(), FileForcer.FSYNC)) {
            while (segmentFiles() < 3) {
                log.commit(++transactions, record);
            }
        }
        try (TransactionLog log = TransactionLog.open(dir, config(), FileForcer.FSYNC)) {
            List<TransactionLog.Interrupted> interrupted = log.interrupted();
            assertEquals(transactions, interrupted.size(), "every commit record is still there");
            List<Long> ids = new ArrayList<>();
            interrupted.forEach(t -> ids.addAll(t.records()));
            log.finished(ids.stream().mapToLong(Long::longValue).toArray());
            TestAwait.until("the finished segments reclaimed", () -> segmentFiles() == 1);
            assertTrue(log.records() == 0);
        }
    }
}
