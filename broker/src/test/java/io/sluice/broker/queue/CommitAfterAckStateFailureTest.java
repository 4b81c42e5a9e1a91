package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.Directories;
import io.sluice.storage.ack.AckFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * As {@link AckAfterAckStateFailureTest}, for a commit: a queue whose ack state cannot be written (its journal's rotation
 * fails) still acknowledges in memory, but the store's {@code ackAll} throws after part of a batch. A commit acknowledging
 * the deliveries its transaction held handed them to the store in one batch: the rest of it was out of the held and
 * tracked sets and off the backlog already, and stayed unacknowledged, delivered by no one, until a restart.
 */
class CommitAfterAckStateFailureTest {
    private static final int TAG = 1;
    private static final int MESSAGES = 500;
    @TempDir
    Path dir;

    @Test
    void aCommitWhoseJournalRotationFailsAcknowledgesEveryHeldDelivery() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never", "storage.ack-journal-bytes", "4096"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            for (int i = 0; i < MESSAGES; i++) {
                core.publish(q, producer, 7, i, new byte[] {1});
            }
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, (long) MESSAGES);
            FakeConnection consumer = new FakeConnection("consumer");
            Subscription sub = Subscription.open(q, consumer, TAG, MESSAGES, QueueCore.unbounded());
            List<FakeConnection.Delivery> delivered = consumer.await(FakeConnection.Delivery.class, MESSAGES, Duration.ofSeconds(30));
            // Every other delivery: each is a journal record when acknowledged, and 250 of 21 bytes overflow 4,096.
            List<IdRange> even = new ArrayList<>();
            for (int i = 0; i < MESSAGES; i += 2) {
                even.add(IdRange.single(delivered.get(i).id()));
            }
            HeldAcks held = sub.hold(even).get(30, TimeUnit.SECONDS);
            assertNull(held.problem());
            assertEquals(MESSAGES / 2, held.count());

            // A non-empty directory where the rotation's checkpoint goes: the rotation fails.
            Path blocker = q.store().directory().resolve("acks").resolve(AckFiles.CHECKPOINT + ".tmp");
            Files.createDirectories(blocker.resolve("blocker"));
            try {
                q.transactions().commit(new long[0], 0, 0, List.of(held)).get(30, TimeUnit.SECONDS);
                assertNotNull(q.store().failure(), "the rotation failed the queue's storage");
                assertEquals(MESSAGES / 2L, (long) QueueCore.onLoop(q, q.store()::unackedMessages),
                        "every held delivery is acknowledged in the store");
                assertEquals(MESSAGES / 2L, (long) QueueCore.onLoop(q, q::backlogBytes));
                assertEquals(MESSAGES / 2L, q.counters().get().acked());
            } finally {
                Directories.deleteRecursively(blocker); // so that the close's checkpoint is written
            }
        }
    }

    /**
     * A commit record kept in the queue (T5 of docs/transactions.md) is acknowledged when its transaction is finished. In a
     * failed ack state the store acknowledges it in memory and throws: it is no longer pending all the same, or the queue,
     * which counts its messages as the store's unacknowledged less its pending ones, would count one message too few until
     * a restart. Found by a review, as a sibling of the drop-oldest and dead-letter acks that throw after acknowledging.
     */
    @Test
    void aCommitRecordFinishedAfterTheAckStateFailedIsNoLongerPending() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never", "storage.ack-journal-bytes", "4096"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            AckAfterAckStateFailureTest.Delivered out = AckAfterAckStateFailureTest.publishAndDeliver(core, q, MESSAGES);
            long record = q.transactions().writeCommitRecord(1, ByteBuffer.wrap(new byte[] {9})).get(30, TimeUnit.SECONDS);
            assertEquals(MESSAGES, q.messageCount(), "the commit record is pending, not a message");

            Path blocker = AckAfterAckStateFailureTest.blockAckCheckpoints(q);
            try {
                out.sub().ack(AckAfterAckStateFailureTest.everyOther(out.deliveries(), 0, MESSAGES)); // the rotation fails
                QueueCore.onLoop(q, () -> null);
                assertNotNull(q.store().failure(), "the rotation failed the queue's storage");

                ExecutionException notWritten = assertThrows(ExecutionException.class,
                        () -> q.transactions().finishCommitRecord(record).get(30, TimeUnit.SECONDS),
                        "the coordinator is told the ack is not written (the next start finishes the record again)");
                assertTrue(QueueCore.onLoop(q, () -> q.store().isAcked(record)), "acknowledged in memory");
                assertEquals(MESSAGES / 2L, q.messageCount(), "the record is no longer pending: " + notWritten.getCause());
                assertEquals(MESSAGES / 2L, q.snapshot().get(30, TimeUnit.SECONDS).backlogMessages());
            } finally {
                Directories.deleteRecursively(blocker);
            }
        }
    }
}
