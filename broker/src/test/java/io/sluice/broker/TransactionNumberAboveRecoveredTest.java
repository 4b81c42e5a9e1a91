package io.sluice.broker;

import io.sluice.broker.config.ConfigLoader;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.protocol.TxBeginFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.sluice.broker.TransactionFrames.declare;
import static io.sluice.broker.TransactionFrames.txPublish;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * X4 of docs/transactions.md: a new transaction's number is above every transaction number the broker's storage still
 * holds at its start, whatever the wall clock says. Before (found by a review), numbers started at the clock and were
 * raised only past the numbers of commit records: a clock set back between two runs handed out again the number of a
 * transaction whose staged messages, never committed, were still on disk. Here the previous run's uncommitted staging
 * carries a number a day ahead of the clock, as it would after the clock was set back by a day.
 */
class TransactionNumberAboveRecoveredTest {
    @TempDir
    Path dir;

    @Test
    void aNewTransactionIsNumberedAboveAnUncommittedStagingFoundAtTheStartThoughTheClockIsBehindIt() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            declare(c, "invoices");
        }
        long ahead = (System.currentTimeMillis() + TimeUnit.DAYS.toMillis(1)) << 16;
        try (MessageStore store = MessageStore.open(dir, new ConfigLoader().load(null, Map.of("broker.data-dir", dir.toString(),
                "storage.reserved-disk-bytes", "67108864")).storeConfig())) {
            QueueStore invoices = store.queue("invoices");
            ByteBuffer staged = ByteBuffer.wrap("never committed".getBytes(StandardCharsets.UTF_8));
            invoices.appendStaged(ahead, staged, 0, 0, 0, staged.remaining());
            invoices.whenDurable(invoices.writtenIndex()).join();
        }
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            QueueStore invoices = broker.queues().get("invoices").store();
            assertEquals(0, invoices.unackedMessages(), "the uncommitted staging was discarded at the start");
            c.send(new TxBeginFrame(1, 0));
            txPublish(c, 1, "invoices", "i1");
            TestAwait.until("the TX_PUBLISH staged", Duration.ofSeconds(10), () -> invoices.unackedMessages() == 1);
            List<Long> unacked = new ArrayList<>();
            invoices.forEachUnacked(unacked::add);
            long number = invoices.read(unacked.get(0)).producerId(); // a staged record carries its transaction's number
            assertTrue(number > ahead, "transaction number " + number + " is not above " + ahead + ", found at the start");
        }
    }
}
