package io.sluice.broker.cluster;

import io.sluice.protocol.DeleteQueueFrame;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Rule R4: a node that restarts replays the log after its last marker, declares and deletes included, so the
 * entries of a deleted queue replayed by name land in the queue that the replayed delete then removes, and the
 * replayed declare and later entries rebuild the new queue. A change that skipped replayed declares and deletes (by
 * the position of the last one applied) broke this and was reverted: the node held the deleted queue's message in the
 * new queue, and a replayed ACK would have acknowledged the new queue's ids (found by a review).
 */
class ShardApplierDeleteReplayTest extends ShardApplierFixture {
    private static byte[] deleteOrders(long call) {
        return ShardEntry.encode(OTHER_NODE, call, "orders", new DeleteQueueFrame(0, "orders"), MAX_FRAME);
    }

    @Test
    void aReplayedPublishOfADeletedQueueDoesNotLandInTheQueueDeclaredAgainUnderItsName() {
        ShardApplier applier = applier(EntryLevels.SUPPORTED);
        applier.applyLogEntry(declare(1), 10).join();
        applier.applyLogEntry(publish(2, 7, 1, 1), 11).join();
        applier.applyLogEntry(deleteOrders(3), 12).join();
        applier.applyLogEntry(declare(4), 13).join();
        applier.applyLogEntry(publish(5, 8, 1, 1), 14).join();
        assertEquals(List.of("8:1"), stored(queues.get("orders")), "what every node holds");

        reopenQueues(); // a crash before any marker: the whole log is replayed
        applier = applier(EntryLevels.SUPPORTED);
        applier.applyLogEntry(declare(1), 10).join();
        applier.applyLogEntry(publish(2, 7, 1, 1), 11).join();
        applier.applyLogEntry(deleteOrders(3), 12).join();
        applier.applyLogEntry(declare(4), 13).join();
        applier.applyLogEntry(publish(5, 8, 1, 1), 14).join();

        assertEquals(List.of("8:1"), stored(queues.get("orders")),
                "the restarted node must not hold the deleted queue's message in the queue declared again");
    }
}
