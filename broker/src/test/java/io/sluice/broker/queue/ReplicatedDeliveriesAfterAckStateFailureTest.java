package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.Directories;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A cluster node records the leader's deliveries (rule R10 of docs/replication.md) in its store. In a failed ack state (a
 * journal rotation's checkpoint fails: the queue's storage is failed, docs/storage.md) the store records them in memory
 * and throws, as it takes acks in memory and throws. The node applies both alike: the entry counts applied, the counts are
 * what this node delivers with if it leads, and it goes on until its next append to that queue or its next snapshot stops
 * it (rule R2); no snapshot marker is written past a failed store, so a restart applies the entry again from the log.
 * Found by a review: the throw stopped the node at the deliveries entry, while a replicated ack in the same state was
 * applied and the node went on.
 */
class ReplicatedDeliveriesAfterAckStateFailureTest {
    private static final Map<String, String> CONFIG = Map.of("storage.durability", "never", "storage.ack-journal-bytes", "4096");
    /** Delivered, of 500: every other one acknowledged overflows the ack journal of 4,096 bytes, whose rotation fails. */
    private static final int DELIVERED = 400;
    @TempDir
    Path dir;

    @Test
    void deliveriesRecordedInMemoryAfterTheAckStateFailedAreAppliedAsAcksAre() throws Exception {
        try (QueueCore core = new QueueCore(dir, CONFIG)) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            AckAfterAckStateFailureTest.Delivered out = AckAfterAckStateFailureTest.publishAndDeliver(core, q, 500, DELIVERED);
            Path blocker = AckAfterAckStateFailureTest.blockAckCheckpoints(q);
            try {
                out.sub().ack(AckAfterAckStateFailureTest.everyOther(out.deliveries(), 0, DELIVERED)); // the rotation fails
                QueueCore.onLoop(q, () -> null);
                assertNotNull(q.store().failure(), "the rotation failed the queue's storage");

                // The leader's entry: the odd ones of those delivered here, each for the third time.
                long[] ids = new long[DELIVERED / 2];
                int[] counts = new int[ids.length];
                for (int i = 0; i < ids.length; i++) {
                    ids[i] = out.deliveries().get(2 * i + 1).id();
                    counts[i] = 3;
                }
                q.applyReplicatedDeliveries(ids, counts);
                QueueCore.onLoop(q, () -> null);

                assertNull(core.queues.applyHalt().reason(), "the entry is applied, in memory, as acks are");
                for (long id : ids) {
                    assertEquals(3, (int) QueueCore.onLoop(q, () -> q.store().deliveryCount(id)), "message " + id);
                }

                long acked = QueueCore.onLoop(q, q.store()::writtenIndex); // the last message, delivered to no one here
                q.applyReplicatedAcks(List.of(IdRange.single(acked)));
                QueueCore.onLoop(q, () -> null);
                assertNull(core.queues.applyHalt().reason(), "an ack in the same state is applied too");
                assertTrue(QueueCore.onLoop(q, () -> q.store().isAcked(acked)));
            } finally {
                Directories.deleteRecursively(blocker); // so that the close's checkpoint is written
            }
        }
    }
}
