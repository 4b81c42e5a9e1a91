package io.sluice.broker.txn;

import io.sluice.broker.TestAwait;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueCore;
import io.sluice.storage.Directories;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.ack.AckFiles;
import io.sluice.storage.durability.FileForcer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The transaction log acknowledges a record once its transaction no longer needs it (X3 and X4 of docs/transactions.md).
 * A log whose ack state cannot be written (a journal rotation's checkpoint fails: its storage is failed, docs/storage.md)
 * acknowledges in memory and throws, as a queue's does; that is a finish all the same (the next start finds the record
 * again and finishes it again, which changes nothing). Found by a review: at a start, the throw of one rolled-back
 * transaction's finish left the recovery half done (the transactions after it neither rolled back nor their
 * acknowledgements applied again, no staged message discarded nor made visible) and the broker did not start.
 *
 * <p>A stopped broker's log is given, by hand, records of transactions without a commit record (an earlier broker's
 * format, rolled back at the start: one journal record each, enough to overflow an ack journal of 4,096 bytes) and last a
 * commit record acknowledging every message of a queue, which the recovery must still apply. The recovery runs on the
 * queue core ({@link QueueCore}), so that the log's checkpoint can be made to fail after its open and before it.
 */
class RecoveryAfterTheLogsAckStateFailedTest {
    private static final int ROLLED_BACK = 300;
    @TempDir
    Path dir;

    @Test
    void aRecoveryWhoseLogCannotWriteItsAcksFinishesEveryTransactionInMemory() throws Exception {
        Map<String, String> settings = Map.of("storage.durability", "never", "storage.ack-journal-bytes", "4096",
                "storage.reserved-disk-bytes", Long.toString(64L << 20));
        BrokerConfig config = new ConfigLoader().load(null, settings);
        long[] orders = new long[3];
        long incarnation;
        try (MessageStore store = MessageStore.open(dir, config.storeConfig())) {
            QueueStore queue = store.createQueue("orders");
            for (int i = 0; i < orders.length; i++) {
                orders[i] = queue.append(null, new byte[] {1});
            }
            incarnation = queue.incarnation().id();
        }
        try (MessageStore transactions = MessageStore.open(dir.resolve(TransactionLog.DIRECTORY), config.storeConfig())) {
            QueueStore log = transactions.createQueue(TransactionLog.LOG_NAME);
            for (long number = 1; number <= ROLLED_BACK; number++) {
                log.append(number, TransactionLog.KIND_COMMIT - 1, null, ByteBuffer.wrap(new byte[] {1})); // no commit record
            }
        }
        try (TransactionLog log = TransactionLog.open(dir, config.storeConfig(), FileForcer.FSYNC)) {
            CommitRecord acknowledgesEveryOrder = new CommitRecord(List.of(), List.of(new CommitRecord.Part("orders", incarnation, orders)));
            log.whenDurable(log.commit(ROLLED_BACK + 1, acknowledgesEveryOrder)).get(30, TimeUnit.SECONDS);
        }
        try (QueueCore core = new QueueCore(dir, settings)) {
            TransactionLog log = TransactionLog.open(dir, config.storeConfig(), FileForcer.FSYNC);
            // Now that the log is open (its open writes a checkpoint), a non-empty directory where its next checkpoint is
            // written first: its journal's rotation fails.
            Path blocker = dir.resolve(TransactionLog.DIRECTORY).resolve("queues").resolve(TransactionLog.LOG_NAME)
                    .resolve("acks").resolve(AckFiles.CHECKPOINT + ".tmp");
            Files.createDirectories(blocker.resolve("blocker"));
            TransactionCoordinator coordinator = null;
            try {
                coordinator = TransactionCoordinator.open(log, core.queues, core.config.transactions); // closes the log if it throws
                BrokerQueue queue = core.queues.get("orders");
                assertEquals(0, queue.messageCount(), "the commit after the rolled-back transactions is applied again");
                TransactionCoordinator recovered = coordinator;
                assertEquals(0L, TestAwait.value("every record finished, in memory", Duration.ofSeconds(10),
                        recovered::logRecords, records -> records == 0));
            } finally {
                Directories.deleteRecursively(blocker); // so that the close's checkpoint is written
                if (coordinator != null) {
                    coordinator.close();
                }
            }
        }
    }
}
