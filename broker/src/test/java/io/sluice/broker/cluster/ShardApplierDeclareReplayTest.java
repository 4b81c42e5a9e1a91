package io.sluice.broker.cluster;

import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.DeleteQueueFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Rules R2 and R4 of docs/replication.md: a DECLARE_QUEUE refused under {@code limits.max-queues} is refused on every
 * node alike; replayed after a restart, into stores that already hold the later DELETE_QUEUE's effect, it must be
 * refused again, not create a queue that no other node has.
 */
class ShardApplierDeclareReplayTest extends ShardApplierFixture {
    private static byte[] declareQueue(long call, String name) {
        return ShardEntry.encode(OTHER_NODE, call, name, new DeclareQueueFrame(0, name, QueueSettings.EMPTY), MAX_FRAME);
    }

    private static byte[] deleteQueue(long call, String name) {
        return ShardEntry.encode(OTHER_NODE, call, name, new DeleteQueueFrame(0, name), MAX_FRAME);
    }

    private List<String> queueNames() {
        TreeSet<String> names = new TreeSet<>();
        queues.all().forEach(q -> names.add(q.name()));
        return List.copyOf(names);
    }

    @Test
    void aDeclareRefusedAtTheQueueLimitIsRefusedAgainWhenReplayed() {
        queues.limitQueues(2); // limits.max-queues: 2, as every node has it
        ShardApplier applier = applier(EntryLevels.SUPPORTED);
        applier.applyLogEntry(declareQueue(1, "a"), 10).join();
        applier.applyLogEntry(declareQueue(2, "b"), 11).join();
        queues.appliedEntriesMarked().join(); // a marker through entry 11: a restart replays from 12 on
        applier.applyLogEntry(declareQueue(3, "c"), 12).join(); // refused on every node: a third queue
        applier.applyLogEntry(deleteQueue(4, "a"), 13).join();
        assertEquals(List.of("b"), queueNames(), "what every node holds");

        reopenQueues(); // a crash before the next marker: the log after entry 11 is replayed
        queues.limitQueues(2);
        applier = applier(EntryLevels.SUPPORTED);
        applier.applyLogEntry(declareQueue(3, "c"), 12).join();
        applier.applyLogEntry(deleteQueue(4, "a"), 13).join();

        assertEquals(List.of("b"), queueNames(), "the restarted node must hold the queues every other node holds");
    }
}
