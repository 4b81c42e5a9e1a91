package io.sluice.broker.queue;

import io.netty.buffer.ByteBufAllocator;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.Directories;
import io.sluice.storage.ack.AckFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * As {@link AckAfterAckStateFailureTest}, for a rollback: a queue whose ack state cannot be written (its journal's rotation
 * fails) still acknowledges in memory, but the store's {@code ackAll} throws after part of a batch. A rollback discarding
 * what its transaction staged handed the staged messages to the store once, after taking them out of the pending set:
 * the rest of the batch stayed unacknowledged, no longer pending yet counted as such, and in the backlog's bytes, until a
 * restart.
 */
class RollbackAfterAckStateFailureTest {
    private static final int PER_TRANSACTION = 250;
    @TempDir
    Path dir;

    @Test
    void aRollbackWhoseJournalRotationFailsDiscardsEveryStagedMessage() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never", "storage.ack-journal-bytes", "4096"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            // Transactions 1 and 2 stage one message each in turn: 1's are every other record, so each is a journal
            // record when discarded, and 250 of 21 bytes overflow 4,096.
            long[] rolledBack = new long[PER_TRANSACTION];
            long bytes = 0;
            for (int i = 0; i < PER_TRANSACTION; i++) {
                for (long transaction = 1; transaction <= 2; transaction++) {
                    PublishFrameBuilder frame = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, q.name());
                    frame.add(transaction, i, List.of(), new byte[] {(byte) transaction});
                    QueueTransactions.Staging staged = q.transactions().stage(transaction, frame.build(), producer, 1, 1)
                            .get(30, TimeUnit.SECONDS);
                    assertEquals(1, staged.count(), staged.refusal());
                    if (transaction == 1) {
                        rolledBack[i] = staged.id(0);
                        bytes += staged.bytes();
                    }
                }
            }
            core.publish(q, producer, 9, 0, new byte[] {9}); // a visible message after them: the reader walks past them all
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, 2L * PER_TRANSACTION + 1);

            // A non-empty directory where the rotation's checkpoint goes: the rotation fails.
            Path blocker = q.store().directory().resolve("acks").resolve(AckFiles.CHECKPOINT + ".tmp");
            Files.createDirectories(blocker.resolve("blocker"));
            try {
                q.transactions().discard(rolledBack, PER_TRANSACTION, bytes).get(30, TimeUnit.SECONDS);
                assertNotNull(q.store().failure(), "the rotation failed the queue's storage");
                assertEquals(PER_TRANSACTION + 1L, (long) QueueCore.onLoop(q, q.store()::unackedMessages),
                        "every message of the transaction rolled back is discarded");
                assertEquals(1L, (long) QueueCore.onLoop(q, q::messageCount), "transaction 2's are still pending");
                assertEquals(PER_TRANSACTION + 1L, (long) QueueCore.onLoop(q, q::backlogBytes),
                        "transaction 2's staged bytes and the visible message's");
            } finally {
                Directories.deleteRecursively(blocker); // so that the close's checkpoint is written
            }
        }
    }
}
