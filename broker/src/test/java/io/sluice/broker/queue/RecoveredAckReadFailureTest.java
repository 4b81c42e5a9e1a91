package io.sluice.broker.queue;

import io.sluice.protocol.QueueSettings;
import io.sluice.storage.StorageFailedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Recovery applies a committed transaction's acknowledgements again ({@link QueueTransactions#ackRecovered}), reading
 * each message for the bytes the backlog loses. One whose read fails (the store failed, not a damaged record) fails the
 * recovery of that commit, so that the next start tries again, but the others are acknowledged now: before (found by a
 * review), the failure stopped the walk, and the messages after it, acknowledged by a committed transaction, were
 * delivered again in this run as well.
 */
class RecoveredAckReadFailureTest {
    @TempDir
    Path dir;

    @Test
    void theOthersAreAcknowledgedAndTheFailureIsReported() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("orders", QueueSettings.EMPTY);
            core.publish(q, new FakeConnection("producer"), 1, 0, new byte[] {1}, new byte[] {2, 2}, new byte[] {3, 3, 3});
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, 3L);
            long[] ids = QueueCore.onLoop(q, () -> {
                long first = q.store().nextUnacked(0);
                long second = q.store().nextUnacked(first + 1);
                return new long[] {first, second, q.store().nextUnacked(second + 1)};
            });
            QueueCore.onLoop(q, () -> {
                q.readsThrough(id -> {
                    if (id == ids[1]) {
                        throw new StorageFailedException("a read of queue 'orders' faulted (injected)", null);
                    }
                    return q.store().read(id);
                });
                return null;
            });

            ExecutionException failed = assertThrows(ExecutionException.class,
                    () -> q.transactions().ackRecovered(ids).get(30, TimeUnit.SECONDS), "the next start must try again");
            assertInstanceOf(StorageFailedException.class, failed.getCause());
            assertEquals(1L, (long) QueueCore.onLoop(q, q.store()::unackedMessages), "the two others are acknowledged");
            assertTrue(QueueCore.onLoop(q, () -> q.store().isAcked(ids[0]) && q.store().isAcked(ids[2])));
            assertEquals(2L, (long) QueueCore.onLoop(q, q::backlogBytes), "the unreadable one's bytes stay counted");
            assertEquals(2L, q.counters().get().acked());
        }
    }
}
