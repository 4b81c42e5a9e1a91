package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.StorageFailedException;
import io.sluice.storage.durability.FileForcer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * T6 of {@link QueueTransactions}: a queue closed for its delete still has its files until the delete's wait
 * (X5) is over, and a crash meanwhile brings it back whole. So what a commit applies there must be stored, and
 * its messages must not count as acknowledged before the files are gone.
 */
class DeletingQueueTransactionsTest {
    private static final int TAG = 3;
    @TempDir
    Path dir;

    @Test
    void aCommitAppliedInAQueueClosedForItsDeleteStoresItsAcknowledgementsThere() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue orders = core.queues.declare("orders", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            FakeConnection worker = new FakeConnection("worker");
            core.publish(orders, producer, 1, 0, new byte[10], new byte[10]);
            Subscription sub = Subscription.open(orders, worker, TAG, 2, QueueCore.unbounded());
            List<FakeConnection.Delivery> delivered = worker.await(FakeConnection.Delivery.class, 2, Duration.ofSeconds(30));
            long taken = delivered.get(0).id();
            long other = delivered.get(1).id();
            HeldAcks held = sub.hold(List.of(IdRange.single(taken))).get(30, TimeUnit.SECONDS);

            QueueCore.onLoop(orders, () -> {
                orders.close(); // what the delete does before its wait (X5), the files still there
                return null;
            });
            orders.transactions().commit(new long[0], 0, 0, List.of(held)).get(30, TimeUnit.SECONDS);

            assertTrue(QueueCore.onLoop(orders, () -> orders.store().isAcked(taken)),
                    "the commit's acknowledgement is stored: a crash before the files go must not bring the message back");
            assertTrue(!orders.transactions().isAcknowledged(other),
                    "a message nobody acknowledged is not taken as acknowledged while the queue's files are there");
            assertTrue(core.queues.delete("orders"));
            assertTrue(orders.transactions().isAcknowledged(other), "once the files are gone, nothing of the queue is left");
            assertEquals(Long.MAX_VALUE, orders.transactions().acknowledgedBelow());
        }
    }

    @Test
    void aStorageFailureOfAQueueClosedForItsDeleteFailsTheStagedMessagesDurabilityWhileItsFilesAreThere() throws Exception {
        AtomicBoolean failing = new AtomicBoolean();
        FileForcer forcer = (channel, file) -> {
            if (failing.get() && file.toString().contains("orders")) {
                throw new IOException("Input/output error (injected)");
            }
            FileForcer.FSYNC.force(channel, file);
        };
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "always"), forcer)) {
            BrokerQueue orders = core.queues.declare("orders", QueueSettings.EMPTY);
            failing.set(true);
            core.publish(orders, new FakeConnection("producer"), 1, 0, new byte[10]);
            long lastId = QueueCore.onLoop(orders, () -> orders.store().writtenIndex());
            QueueCore.onLoop(orders, () -> {
                orders.close(); // the delete's close; its force fails too, and the files stay until the delete's wait is over
                return null;
            });

            CompletableFuture<Long> durable = orders.transactions().whenStagedDurable(lastId);
            ExecutionException refused = assertThrows(ExecutionException.class, () -> durable.get(30, TimeUnit.SECONDS),
                    "a staged message that never reached the disk of a queue whose files are still there is not durable: "
                            + "a crash before the files go brings the queue back without it");
            assertInstanceOf(StorageFailedException.class, refused.getCause());
        }
    }
}
