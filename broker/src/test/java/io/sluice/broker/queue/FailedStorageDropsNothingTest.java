package io.sluice.broker.queue;

import io.netty.buffer.ByteBufAllocator;
import io.sluice.broker.error.ErrorCodes;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.broker.TestAwait;
import io.sluice.storage.durability.FileForcer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A full {@code drop-oldest} queue whose storage has failed (here a segment's force: docs/storage.md, rule "a failed force
 * is final") refuses every append, so a publish to it is refused with STORAGE_FAILED before the quota makes room: nothing
 * is dropped, or moved to the dead-letter queue, for a message that cannot be stored. Found by a review: each refused
 * publish first dropped the oldest message (its ack journaled, as acks go on in a failed queue; in a failed ack state
 * acknowledged in memory, gone until a restart), and its producer heard nothing of it; so did a dead-letter copy into such
 * a queue and a transaction's publish.
 *
 * <p>A cluster leader's admission is the exception, on purpose (docs/flow-control.md, "On a cluster"): its drop is
 * replicated before the publish, which the other nodes store; the leader stops at its own apply (rule R2).
 */
class FailedStorageDropsNothingTest {
    private static final Map<String, String> CONFIG = Map.of("storage.durability", "always");
    private static final long PRODUCER = 7;
    private static final int HARD = 10;
    @TempDir
    Path dir;
    /** Forces of the files under this directory fail, as a disk's EIO: set to a queue's directory to fail its storage. */
    private final AtomicReference<Path> failForcesUnder = new AtomicReference<>();
    private final FileForcer forcer = (channel, file) -> {
        Path failing = failForcesUnder.get();
        if (failing != null && file.toAbsolutePath().startsWith(failing)) {
            throw new IOException("Input/output error (injected)");
        }
        channel.force(false);
    };

    @Test
    void aPublishToAFullDropOldestQueueWhoseStorageFailedDropsNothing() throws Exception {
        try (QueueCore core = new QueueCore(dir, CONFIG, forcer)) {
            Failed full = fillAndFailTheStorage(core, "q", dropOldest().build());

            PublishErrorFrame answer = publishRefused(core, full);
            assertEquals(ErrorCode.STORAGE_FAILED, answer.errorCode(), answer.message());
            assertTrue(answer.message().contains("queue 'q' refuses the append"), answer.message());
            assertNothingDropped(full, "nothing dropped for a publish the store refuses");
            assertEquals((long) full.held().size(), (long) QueueCore.onLoop(full.q(), full.q()::backlogBytes));
        }
    }

    /** {@code deadLetterDropped}: a drop is a move to the dead-letter queue, and no move is started either. */
    @Test
    void aPublishToAFullQueueDeadLetteringItsDropsWhoseStorageFailedMovesNothing() throws Exception {
        try (QueueCore core = new QueueCore(dir, CONFIG, forcer)) {
            Failed full = fillAndFailTheStorage(core, "q", dropOldest().set(QueueOptions.DEAD_LETTER_DROPPED, true).build());
            BrokerQueue dead = core.queues.get("q.dlq");
            long copies = QueueCore.onLoop(dead, dead.store()::unackedMessages);

            assertEquals(ErrorCode.STORAGE_FAILED, publishRefused(core, full).errorCode());
            assertNothingDropped(full, "nothing moved for a publish the store refuses");
            assertEquals(copies, (long) QueueCore.onLoop(dead, dead.store()::unackedMessages), "no copy");
            assertEquals(0L, (long) QueueCore.onLoop(full.q(), full.q()::deadLetterFailures));
        }
    }

    /** A dead-letter copy forwarded into a full {@code drop-oldest} dead-letter queue whose storage failed. */
    @Test
    void aCopyForwardedToAFullDropOldestQueueWhoseStorageFailedDropsNothing() throws Exception {
        try (QueueCore core = new QueueCore(dir, CONFIG, forcer)) {
            Failed full = fillAndFailTheStorage(core, "dead", dropOldest().build());

            ExecutionException refused = assertThrows(ExecutionException.class, () -> full.q().acceptForwarded(PRODUCER,
                    1_000_000, ByteBuffer.allocate(0), ByteBuffer.wrap(new byte[] {1})).get(30, TimeUnit.SECONDS));
            assertEquals(ErrorCode.STORAGE_FAILED, ErrorCodes.of(refused.getCause()), String.valueOf(refused.getCause()));
            assertNothingDropped(full, "nothing dropped for a copy the store refuses");
        }
    }

    /** TX_PUBLISH (staging, T2 of docs/transactions.md) into a full {@code drop-oldest} queue whose storage failed. */
    @Test
    void aTransactionalPublishToAFullDropOldestQueueWhoseStorageFailedDropsNothing() throws Exception {
        try (QueueCore core = new QueueCore(dir, CONFIG, forcer)) {
            Failed full = fillAndFailTheStorage(core, "q", dropOldest().build());

            QueueTransactions.Staging staged = full.q().transactions().stage(1, frame(full.q(), 0, 0), full.producer(), 1, 1)
                    .get(30, TimeUnit.SECONDS);
            assertEquals(0, staged.count());
            assertEquals(ErrorCode.STORAGE_FAILED, staged.refusalCode(), staged.refusal());
            assertTrue(staged.refusal().contains("queue 'q' refuses the append"), staged.refusal());
            assertNothingDropped(full, "nothing dropped for a message the store refuses");
        }
    }

    /**
     * A cluster leader (rule R9, the log played by {@link LogStub}) whose queue's storage failed still drops and submits:
     * the publish is committed and stored by the other nodes, and this node stops at its own apply of it (rule R2), so the
     * drop makes room for a message the cluster stores. Refused here, the queue would refuse every publish while the other
     * nodes could store them, and the leader would go on leading it until its next snapshot.
     */
    @Test
    void aLeaderWhoseStorageFailedStillDropsAndSubmitsWhatTheOtherNodesStore() throws Exception {
        try (QueueCore core = new QueueCore(dir, CONFIG, forcer)) {
            Failed full = fillAndFailTheStorage(core, "q", dropOldest().build());
            LogStub log = new LogStub();
            core.queues.replication(log);

            log.publish(full.q(), full.producer(), frame(full.q(), PRODUCER, full.next()));
            assertEquals(Integer.valueOf(1), log.publishes.poll(30, TimeUnit.SECONDS), "the publish is submitted");
            LogStub.Submitted drop = log.drops.poll(30, TimeUnit.SECONDS);
            assertNotNull(drop, "its drop is submitted before it");
            long oldest = full.held().get(0);
            assertEquals(oldest, drop.ids().get(0).from(), "the oldest message");
            assertNull(core.queues.applyHalt().reason(), "nothing applied yet");
            assertFalse(QueueCore.onLoop(full.q(), () -> full.q().store().isAcked(oldest)), "held until its entry is applied");
        }
    }

    /** A full queue whose storage failed: what it had dropped, and the messages it holds. */
    private record Failed(BrokerQueue q, FakeConnection producer, long next, long dropped, List<Long> held) {
    }

    private static QueueSettings.Builder dropOldest() {
        return QueueSettings.builder().quotaMessages(0, HARD).overflowPolicy("drop-oldest");
    }

    /**
     * Declares {@code name} and publishes {@link #HARD} messages into it, which fill it, then fails the forces of its
     * files: the next publish drops the oldest message and is stored, and its force fails the queue's storage.
     */
    private Failed fillAndFailTheStorage(QueueCore core, String name, QueueSettings settings) throws Exception {
        BrokerQueue q = core.queues.declare(name, settings);
        FakeConnection producer = new FakeConnection("producer");
        for (int i = 0; i < HARD; i++) {
            core.publish(q, producer, PRODUCER, i, new byte[] {1});
        }
        QueueCore.awaitOnLoop(q, q.store()::unackedMessages, (long) HARD);
        long written = QueueCore.onLoop(q, q.store()::writtenIndex);
        TestAwait.until("the first messages durable", () -> q.store().durableIndex() >= written); // no force of theirs fails
        failForcesUnder.set(q.store().directory().toAbsolutePath());
        core.publish(q, producer, PRODUCER, HARD, new byte[] {1});
        TestAwait.until("the force of queue '" + q.name() + "' failed", () -> q.store().failure() != null);
        QueueCore.awaitOnLoop(q, q::dropped, 1L); // a dead-letter move counts once its copy is durable
        assertEquals((long) HARD, (long) QueueCore.onLoop(q, q.store()::unackedMessages), "full, and failed");
        return new Failed(q, producer, HARD + 1, 1, unacked(q));
    }

    /** Publishes the next message into the failed queue; its answer, a refusal. */
    private static PublishErrorFrame publishRefused(QueueCore core, Failed full) throws Exception {
        core.publish(full.q(), full.producer(), PRODUCER, full.next(), new byte[] {1});
        List<PublishErrorFrame> refused = full.producer().await(PublishErrorFrame.class, list -> list.stream().anyMatch(f ->
                f.sequences().from() <= full.next() && full.next() <= f.sequences().to()), Duration.ofSeconds(30), "the answer");
        return refused.get(refused.size() - 1);
    }

    private static void assertNothingDropped(Failed full, String what) throws Exception {
        assertEquals(full.dropped(), (long) QueueCore.onLoop(full.q(), full.q()::dropped), what);
        assertEquals(full.held(), unacked(full.q()), "the messages the queue held are all there");
    }

    private static PublishFrame frame(BrokerQueue q, long producerId, long sequence) {
        PublishFrameBuilder frame = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, q.name());
        frame.add(producerId, sequence, List.of(), new byte[] {1});
        return frame.build();
    }

    private static List<Long> unacked(BrokerQueue q) throws Exception {
        return QueueCore.onLoop(q, () -> {
            List<Long> ids = new ArrayList<>();
            q.store().forEachUnacked(ids::add);
            return ids;
        });
    }
}
