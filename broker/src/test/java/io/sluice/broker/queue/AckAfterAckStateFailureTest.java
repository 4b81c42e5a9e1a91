package io.sluice.broker.queue;

import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.broker.error.ErrorCodes;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.NackFrame;
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
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A queue whose ack state cannot be written (its journal's rotation fails: the queue's storage is failed, docs/storage.md,
 * rule "a failed force is final") keeps acknowledging in memory, so that its consumers can drain it. The store's
 * {@code ackAll} acknowledges part of a batch and throws; the rest of the batch was out of the consumer's in-flight
 * deliveries and the tracked set already, and nothing delivered it again until a restart. The consumer is told, with one
 * ERROR STORAGE_FAILED for the frame, that its acks are in memory only (a restart may deliver them again), as a purge is
 * answered; before, it was told nothing.
 */
class AckAfterAckStateFailureTest {
    private static final int TAG = 1;
    private static final Map<String, String> CONFIG = Map.of("storage.durability", "never", "storage.ack-journal-bytes", "4096");
    @TempDir
    Path dir;

    @Test
    void anAckFrameWhoseJournalRotationFailsIsAcknowledgedWhole() throws Exception {
        int messages = 500;
        try (QueueCore core = new QueueCore(dir, CONFIG)) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            Delivered out = publishAndDeliver(core, q, messages);
            Path blocker = blockAckCheckpoints(q);
            try {
                // Every other delivery, one range each: each is a journal record, and 250 of 21 bytes overflow 4,096.
                out.sub.ack(everyOther(out.deliveries, 0, messages));
                QueueCore.onLoop(q, () -> null);
                assertNotNull(q.store().failure(), "the rotation failed the queue's storage");
                assertAcknowledged(q, messages, messages / 2);
                List<ErrorFrame> errors = out.consumer.all(ErrorFrame.class);
                assertEquals(1, errors.size(), "the consumer is told its acks are in memory only, once for the frame: " + errors);
                assertEquals(ErrorCode.STORAGE_FAILED, errors.get(0).errorCode());
                String told = errors.get(0).message();
                assertTrue(told.startsWith("ack of " + messages / 2 + " messages on consumer " + TAG + " of queue 'q' is applied"
                        + " in memory only: the queue's storage failed to write its ack state ("), told);
                assertTrue(told.endsWith("); a restart may deliver them again"), told);
            } finally {
                Directories.deleteRecursively(blocker); // so that the close's checkpoint is written
            }
        }
    }

    /**
     * Once the ack state failed, every change tries a whole checkpoint (AckLog's rule "no record behind a newer
     * checkpoint"): a rewrite of the whole ack state and an fsync, on a failing disk, on the event loop the queue shares
     * with others. One ACK frame of scattered ids tries one. It used to try one per two ids (the store acknowledged a
     * batch up to its second run before it tried, and the queue handed it the rest again, checking each id left after
     * every try): 250 for this frame of 500, and a quarter of a million looks at the store under its lock for one of 1,024.
     */
    @Test
    void anAckFrameOfScatteredIdsAfterTheAckStateFailedTriesOneCheckpoint() throws Exception {
        int failing = 400;
        int scattered = 1_000;
        try (QueueCore core = new QueueCore(dir, CONFIG)) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            Delivered out = publishAndDeliver(core, q, failing + scattered);
            Path blocker = blockAckCheckpoints(q);
            try {
                out.sub.ack(everyOther(out.deliveries, 0, failing)); // 200 records overflow the journal: its rotation fails
                QueueCore.onLoop(q, () -> null);
                assertNotNull(q.store().failure(), "the rotation failed the queue's storage");

                AckCheckpointAttempts attempts = QueueCore.onLoop(q, () -> AckCheckpointAttempts.count(q.store()));
                out.sub.ack(everyOther(out.deliveries, failing, failing + scattered)); // 500 ids, none next to another
                QueueCore.onLoop(q, () -> null);
                assertEquals(1, attempts.begun(), "checkpoints tried for one ACK frame");
                assertAcknowledged(q, failing + scattered, (failing + scattered) / 2);
            } finally {
                Directories.deleteRecursively(blocker);
            }
        }
    }

    /**
     * A purge after the ack state failed: the store acknowledges all of it in memory, so the broker's figures follow
     * what the store keeps, and the purge is answered STORAGE_FAILED, naming the queue. Applied in part (the store
     * stopping at the first gap whose journaling tried a checkpoint), the store held messages acknowledged that the
     * broker's backlog still counted, and the caller was told of an internal error.
     */
    @Test
    void aPurgeAfterTheAckStateFailedIsAppliedWholeAndAnsweredStorageFailed() throws Exception {
        int failing = 400;
        int messages = 1_000;
        try (QueueCore core = new QueueCore(dir, CONFIG)) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            Delivered out = publishAndDeliver(core, q, messages);
            Path blocker = blockAckCheckpoints(q);
            try {
                out.sub.ack(everyOther(out.deliveries, 0, failing)); // 200 records overflow the journal: its rotation fails
                QueueCore.onLoop(q, () -> null);
                assertNotNull(q.store().failure(), "the rotation failed the queue's storage");
                // Every other of the rest waits out a long redelivery delay: a purge removes those, a gap of one each.
                List<IdRange> waiting = new ArrayList<>();
                for (int i = failing; i < messages; i += 2) {
                    waiting.add(IdRange.single(out.deliveries.get(i).id()));
                }
                out.sub.nack(new NackFrame(TAG, NackAction.REQUEUE_AFTER_DELAY, Duration.ofHours(1).toMillis(), waiting));
                QueueCore.onLoop(q, () -> null);

                ExecutionException failed = assertThrows(ExecutionException.class, () -> q.purge().get(30, TimeUnit.SECONDS));

                long inFlight = (failing / 2) + (messages - failing) / 2;
                assertEquals(inFlight, (long) QueueCore.onLoop(q, q.store()::unackedMessages),
                        "every message waiting is acknowledged in the store, those out with the consumer are not");
                assertEquals(inFlight, q.messageCount());
                assertEquals(inFlight, (long) QueueCore.onLoop(q, q::backlogBytes), "the byte backlog is what the store keeps");
                assertEquals(inFlight, q.snapshot().get().consumers().get(0).unackedMessages());
                assertEquals(ErrorCode.STORAGE_FAILED, ErrorCodes.of(failed.getCause()), String.valueOf(failed.getCause()));
                assertTrue(failed.getCause().getMessage().contains("'q'"), failed.getCause().getMessage());
            } finally {
                Directories.deleteRecursively(blocker);
            }
        }
    }

    /**
     * A cluster node applies a purge's long range (rule R7 of docs/replication.md) with one store call,
     * {@code QueueStore.ackRangeExcept}, which answers the bytes its backlog loses. After the ack state failed, the store
     * acknowledges the range in memory all the same and throws: the node's backlog and count follow what it acknowledged,
     * as for a single broker's purge. Found by a review: the throw skipped them, and the byte backlog kept the bytes of
     * the 600 messages gone.
     */
    @Test
    void aReplicatedPurgeAfterTheAckStateFailedLeavesTheBacklogAsTheStoreDoes() throws Exception {
        int failing = 400;
        int messages = 1_000;
        try (QueueCore core = new QueueCore(dir, CONFIG)) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            Delivered out = publishAndDeliver(core, q, messages, failing);
            Path blocker = blockAckCheckpoints(q);
            try {
                out.sub.ack(everyOther(out.deliveries, 0, failing)); // 200 records overflow the journal: its rotation fails
                QueueCore.onLoop(q, () -> null);
                assertNotNull(q.store().failure(), "the rotation failed the queue's storage");

                // The purge's entry: everything from the first message to the last; the consumer keeps what it holds.
                q.applyReplicatedAcks(List.of(new IdRange(out.deliveries.get(0).id(), q.store().writtenIndex())));
                QueueCore.onLoop(q, () -> null);

                long left = failing / 2;
                assertEquals(left, (long) QueueCore.onLoop(q, q.store()::unackedMessages),
                        "every message not out with the consumer is acknowledged in the store (in memory)");
                assertEquals(left, (long) QueueCore.onLoop(q, q::backlogBytes), "the byte backlog is what the store keeps");
                assertEquals(left, q.snapshot().get().backlogMessages());
                assertEquals(messages - left, q.counters().get().acked(), "the consumer's acks and the purge's are counted");
                assertEquals(left, q.snapshot().get().consumers().get(0).unackedMessages());
            } finally {
                Directories.deleteRecursively(blocker);
            }
        }
    }

    record Delivered(Subscription sub, List<FakeConnection.Delivery> deliveries, FakeConnection consumer) {
    }

    /** Publishes {@code messages} one-byte messages into {@code q} and delivers them all to one consumer (tag 1). */
    static Delivered publishAndDeliver(QueueCore core, BrokerQueue q, int messages) throws Exception {
        return publishAndDeliver(core, q, messages, messages);
    }

    /** As above, delivering only the first {@code delivered}: the consumer's credit. */
    static Delivered publishAndDeliver(QueueCore core, BrokerQueue q, int messages, int delivered) throws Exception {
        FakeConnection producer = new FakeConnection("producer");
        for (int i = 0; i < messages; i++) {
            core.publish(q, producer, 7, i, new byte[] {1});
        }
        QueueCore.awaitOnLoop(q, q.store()::unackedMessages, (long) messages);
        FakeConnection consumer = new FakeConnection("consumer");
        Subscription sub = Subscription.open(q, consumer, TAG, delivered, QueueCore.unbounded());
        return new Delivered(sub, consumer.await(FakeConnection.Delivery.class, delivered, Duration.ofSeconds(30)), consumer);
    }

    /** A non-empty directory where the ack state's checkpoint is written first: a journal rotation fails. */
    static Path blockAckCheckpoints(BrokerQueue q) throws Exception {
        Path blocker = q.store().directory().resolve("acks").resolve(AckFiles.CHECKPOINT + ".tmp");
        Files.createDirectories(blocker.resolve("blocker"));
        return blocker;
    }

    /** Every other delivery of {@code delivered} from {@code from} (inclusive) to {@code to}, one range each. */
    static AckFrame everyOther(List<FakeConnection.Delivery> delivered, int from, int to) {
        List<IdRange> ranges = new ArrayList<>();
        for (int i = from; i < to; i += 2) {
            ranges.add(IdRange.single(delivered.get(i).id()));
        }
        return new AckFrame(TAG, ranges);
    }

    /**
     * Of {@code messages} one-byte messages delivered, {@code acknowledged} were acknowledged: in the store, and off the
     * consumer's deliveries, the backlog and into the counters.
     */
    private static void assertAcknowledged(BrokerQueue q, int messages, int acknowledged) throws Exception {
        long left = messages - acknowledged;
        assertEquals(left, (long) QueueCore.onLoop(q, q.store()::unackedMessages),
                "every acknowledged delivery is acknowledged in the store");
        assertEquals(left, q.snapshot().get().consumers().get(0).unackedMessages());
        assertEquals(left, (long) QueueCore.onLoop(q, q::backlogBytes));
        assertEquals(acknowledged, q.counters().get().acked());
    }
}
