package io.sluice.broker.txn;

import io.sluice.broker.Broker;
import io.sluice.broker.TestAwait;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.DamagedRecords;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.durability.FileForcer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.sluice.broker.txn.OrderWorker.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Recovery applies a committed transaction's acknowledgements again (step 3 of "Recovery" in docs/transactions.md). A
 * record among them that fails its checksum is discarded, as every reader of the queue discards one, and the
 * acknowledgements after it are applied all the same. Before (found by a review), the store's CorruptRecordException
 * stopped them there: the messages after it stayed, to be delivered again though their transaction committed, and the
 * commit record was kept until the next start, which stopped at the same record again.
 *
 * <p>The stopped broker is given, by hand, a commit record whose acknowledgements were never applied: a crash right
 * after the record is durable leaves that ({@code txn-after-commit-record} of {@code TransactionCrashTest}), but only a
 * child JVM can stop there.
 */
class RecoveredAckOfADamagedRecordTest {
    @TempDir
    Path dir;

    @Test
    void aDamagedRecordARecoveredCommitAcknowledgesIsDiscardedAndTheAcknowledgementsAfterItApplied() throws Exception {
        BrokerConfig config = new ConfigLoader().load(null, Map.of("broker.data-dir", dir.toString(), "broker.port", "0",
                "metrics.port", "0", "storage.reserved-disk-bytes", "67108864"));
        try (Broker broker = Broker.start(config);
             Connection connection = Connection.connect(ConnectionOptions.builder().port(broker.port()).build())) {
            connection.declareQueue("orders", QueueSettings.EMPTY);
            Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
            for (String order : List.of("o1-AAAAAAAA", "o2-BBBBBBBB", "o3-CCCCCCCC")) {
                producer.sendAsync(bytes(order)).get(30, TimeUnit.SECONDS);
            }
        }
        long[] orders;
        long incarnation;
        try (MessageStore store = MessageStore.open(dir, config.storeConfig())) {
            QueueStore queue = store.queue("orders");
            orders = new long[3];
            int[] n = {0};
            queue.forEachUnacked(id -> orders[n[0]++] = id);
            incarnation = queue.incarnation().id();
            DamagedRecords.flipAByteOf(queue.segmentDirectory(), orders[1], "BBBBBBBB");
        }
        try (TransactionLog log = TransactionLog.open(dir, config.storeConfig(), FileForcer.FSYNC)) {
            CommitRecord acknowledgesEveryOrder = new CommitRecord(List.of(), List.of(new CommitRecord.Part("orders", incarnation, orders)));
            log.whenDurable(log.commit(1, acknowledgesEveryOrder)).get(30, TimeUnit.SECONDS);
        }

        try (Broker broker = Broker.start(config)) {
            BrokerQueue queue = broker.queues().get("orders");
            assertEquals(1, queue.store().corruptRecords(), "o2's record discarded");
            assertEquals(0, queue.messageCount(), "o1 and o3 acknowledged by the recovered commit, o2 discarded");
            assertEquals(0L, queue.executor().submit(queue::backlogBytes).get(30, TimeUnit.SECONDS), "o2's bytes left the backlog with it");
            assertEquals(0L, TestAwait.value("the commit record finished: nothing depends on it any more", Duration.ofSeconds(10),
                    () -> broker.transactions().logRecords(), records -> records == 0));
        }
    }
}
