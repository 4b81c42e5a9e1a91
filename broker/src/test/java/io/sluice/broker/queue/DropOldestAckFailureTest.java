package io.sluice.broker.queue;

import io.netty.buffer.ByteBufAllocator;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.Directories;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A {@code drop-oldest} drop whose ack the queue's ack state cannot write (its journal rotation's checkpoint fails: the
 * queue's storage is failed, docs/storage.md) is a drop all the same: the store acknowledges the message in memory and
 * throws, and the queue counts the drop and takes its bytes off the backlog, as the dead-letter move does
 * ({@link DeadLetterMoveAckFailureTest}). Found by a review: the throw left the byte backlog with the dropped message's
 * bytes until a restart, and left the publish that made room without an answer.
 */
class DropOldestAckFailureTest {
    private static final Map<String, String> CONFIG = Map.of("storage.durability", "never", "storage.ack-journal-bytes", "4096");
    private static final long PRODUCER = 7;
    @TempDir
    Path dir;

    /**
     * A single broker: each publish past the hard quota of 10 drops the oldest message, one ack journaled each, until the
     * journal's rotation fails under a drop's ack.
     */
    @Test
    void aDropWhoseAckFailsInTheAckStateIsCountedAndLeavesTheBacklog() throws Exception {
        int hard = 10;
        try (QueueCore core = new QueueCore(dir, CONFIG)) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.builder().quotaMessages(0, hard).overflowPolicy("drop-oldest").build());
            Path blocker = AckAfterAckStateFailureTest.blockAckCheckpoints(q);
            try {
                FakeConnection producer = new FakeConnection("producer");
                long sequence = 0;
                while (q.store().failure() == null && sequence < 1_000) { // about 195 acks fill the journal of 4,096 bytes
                    core.publish(q, producer, PRODUCER, sequence++, new byte[] {1});
                    QueueCore.onLoop(q, () -> null);
                }
                assertNotNull(q.store().failure(), "a drop's ack failed the queue's storage");
                long failing = sequence - 1;

                assertEquals(hard - 1L, (long) QueueCore.onLoop(q, q.store()::unackedMessages),
                        "the last drop's message is acknowledged (in memory), its publish refused");
                assertEquals(hard - 1L, (long) QueueCore.onLoop(q, q::backlogBytes), "the dropped message left the byte backlog");
                assertEquals(hard - 1L, q.snapshot().get(30, TimeUnit.SECONDS).backlogMessages());
                assertEquals(failing - (hard - 1), (long) QueueCore.onLoop(q, q::dropped), "every drop is counted, the last too");
                List<PublishErrorFrame> refused = producer.await(PublishErrorFrame.class, list -> list.stream().anyMatch(f ->
                        f.sequences().from() <= failing && failing <= f.sequences().to()), Duration.ofSeconds(30),
                        "the publish that made room answered");
                PublishErrorFrame answer = refused.get(refused.size() - 1);
                assertEquals(ErrorCode.STORAGE_FAILED, answer.errorCode(), answer.message());
            } finally {
                Directories.deleteRecursively(blocker); // so that the close's checkpoint is written
            }
        }
    }

    /**
     * A cluster leader (rule R9 of docs/replication.md, the log played by {@link LogStub}): a drop is held until its ACK
     * entry is applied here, when the store acknowledges it; in a failed ack state that ack is taken in memory and throws.
     * The drop is applied all the same: counted, and no longer taken off the stored messages as a held one.
     */
    @Test
    void aLeadersDropAppliedAfterTheAckStateFailedIsCounted() throws Exception {
        int hard = 400;
        try (QueueCore core = new QueueCore(dir, CONFIG)) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.builder().quotaMessages(0, hard).overflowPolicy("drop-oldest").build());
            byte[][] payloads = new byte[hard][];
            for (int i = 0; i < hard; i++) {
                payloads[i] = new byte[] {1};
            }
            core.publish(q, new FakeConnection("producer"), PRODUCER, 0, payloads);
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, (long) hard);
            List<Long> ids = new ArrayList<>();
            q.store().forEachUnacked(ids::add);
            LogStub log = new LogStub();
            core.queues.replication(log);
            Path blocker = AckAfterAckStateFailureTest.blockAckCheckpoints(q);
            try {
                // Every other message, acknowledged by the log: 200 journal records overflow 4,096 bytes, the rotation fails.
                List<IdRange> everyOther = new ArrayList<>();
                for (int i = 0; i < hard; i += 2) {
                    everyOther.add(IdRange.single(ids.get(i)));
                }
                q.applyReplicatedAcks(everyOther);
                QueueCore.onLoop(q, () -> null);
                assertNotNull(q.store().failure(), "the rotation failed the queue's storage");

                // 200 stored and 200 admitted (uncommitted) fill the quota; the 201st admitted drops the oldest.
                PublishFrameBuilder frame = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, q.name());
                for (int i = 0; i <= hard / 2; i++) {
                    frame.add(PRODUCER, hard + i, List.of(), new byte[] {1});
                }
                log.publish(q, new FakeConnection("producer"), frame.build());
                LogStub.Submitted drop = log.drops.poll(30, TimeUnit.SECONDS);
                assertNotNull(drop, "the publish dropped nothing");
                assertEquals(List.of(IdRange.single(ids.get(1))), drop.ids(), "the oldest message left");
                assertNull(log.drops.poll(), "one drop");

                q.applyReplicatedAcks(drop.ids()); // the drop's entry is applied here, as on every node
                QueueCore.onLoop(q, () -> drop.applied().complete(null));

                assertTrue(QueueCore.onLoop(q, () -> q.store().isAcked(ids.get(1))), "the drop is acknowledged (in memory)");
                assertEquals(1L, (long) QueueCore.onLoop(q, q::dropped), "the applied drop is counted");
                long left = hard / 2 - 1;
                assertEquals(left, (long) QueueCore.onLoop(q, q.store()::unackedMessages));
                assertEquals(left, q.snapshot().get(30, TimeUnit.SECONDS).backlogMessages(),
                        "the applied drop is no longer taken off what the store holds");
                assertEquals(left, (long) QueueCore.onLoop(q, q::backlogBytes));
                assertNull(core.queues.applyHalt().reason(), "the drop is applied, as a batch of acks is in memory");
            } finally {
                Directories.deleteRecursively(blocker);
            }
        }
    }
}
