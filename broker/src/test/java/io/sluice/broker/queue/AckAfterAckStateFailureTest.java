package io.sluice.broker.queue;

import io.sluice.protocol.AckFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.Directories;
import io.sluice.storage.ack.AckFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * A queue whose ack state cannot be written (its journal's rotation fails: the queue's storage is failed, docs/storage.md,
 * rule "a failed force is final") keeps acknowledging in memory, so that its consumers can drain it. The store's
 * {@code ackAll} acknowledges part of a batch and throws; the rest of the batch was out of the consumer's in-flight
 * deliveries and the tracked set already, and nothing delivered it again until a restart.
 */
class AckAfterAckStateFailureTest {
    private static final int TAG = 1;
    private static final int MESSAGES = 500;
    @TempDir
    Path dir;

    @Test
    void anAckFrameWhoseJournalRotationFailsIsAcknowledgedWhole() throws Exception {
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

            // A non-empty directory where the rotation's checkpoint goes: the rotation fails.
            Path blocker = q.store().directory().resolve("acks").resolve(AckFiles.CHECKPOINT + ".tmp");
            Files.createDirectories(blocker.resolve("blocker"));
            try {
                // Every other delivery, one range each: each is a journal record, and 250 of 21 bytes overflow 4,096.
                List<IdRange> even = new ArrayList<>();
                for (int i = 0; i < MESSAGES; i += 2) {
                    even.add(IdRange.single(delivered.get(i).id()));
                }
                sub.ack(new AckFrame(TAG, even));
                QueueCore.onLoop(q, () -> null);
                assertNotNull(q.store().failure(), "the rotation failed the queue's storage");
                assertEquals(MESSAGES / 2L, (long) QueueCore.onLoop(q, q.store()::unackedMessages),
                        "every acknowledged delivery is acknowledged in the store");
                assertEquals(MESSAGES / 2, q.snapshot().get().consumers().get(0).unackedMessages());
                assertEquals(MESSAGES / 2L, (long) QueueCore.onLoop(q, q::backlogBytes));
                assertEquals(MESSAGES / 2L, q.counters().get().acked());
            } finally {
                Directories.deleteRecursively(blocker); // so that the close's checkpoint is written
            }
        }
    }
}
