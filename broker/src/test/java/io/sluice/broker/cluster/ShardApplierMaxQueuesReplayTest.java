package io.sluice.broker.cluster;

import io.sluice.broker.queue.BrokerQueue;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.DeleteQueueFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;

import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Rule R2 of docs/replication.md: a committed declare has the same outcome on every node and on every replay of it. A
 * node that checked {@code limits.max-queues} against its own catalog when it applied a declare refused one at the limit,
 * then, restarted from a marker before it, replayed it into stores that already reflected a later delete: the replay
 * found room and created a queue no other node had (found by a review). The leader checks the limit before it submits
 * ({@link LeaderQueueLimit}); every node applies a committed declare without it.
 */
class ShardApplierMaxQueuesReplayTest extends ShardApplierFixture {
    private static byte[] declare(long call, String queue) {
        return ShardEntry.encode(OTHER_NODE, call, queue, new DeclareQueueFrame(0, queue, QueueSettings.EMPTY), MAX_FRAME);
    }

    private static byte[] delete(long call, String queue) {
        return ShardEntry.encode(OTHER_NODE, call, queue, new DeleteQueueFrame(0, queue), MAX_FRAME);
    }

    private Set<String> catalog() {
        Set<String> names = new TreeSet<>();
        queues.all().stream().map(BrokerQueue::name).forEach(names::add);
        return names;
    }

    @Test
    void aDeclareAppliedAtTheLimitEndsAsItEndedWhenReplayedAfterALaterDelete() {
        queues.limitQueues(1);
        ShardApplier applier = applier(EntryLevels.SUPPORTED);
        applier.applyLogEntry(declare(1, "orders"), 10).join();
        applier.applyLogEntry(declare(2, "invoices"), 11).join(); // the catalog is full here
        applier.applyLogEntry(delete(3, "orders"), 12).join();
        Set<String> firstApply = catalog();

        reopenQueues(); // a crash with the marker at 10: the stores hold entries 11 and 12 already, and both are replayed
        queues.limitQueues(1);
        applier = applier(EntryLevels.SUPPORTED);
        applier.applyLogEntry(declare(2, "invoices"), 11).join();
        applier.applyLogEntry(delete(3, "orders"), 12).join();

        assertEquals(firstApply, catalog(), "the replayed declare must end as its first apply did");
    }
}
