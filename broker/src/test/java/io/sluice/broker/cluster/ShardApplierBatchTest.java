package io.sluice.broker.cluster;

import io.sluice.broker.queue.BrokerQueue;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** A batch of entries ({@link EntryBatch}) is applied entry by entry, as the same entries one per log entry are (rule R2). */
class ShardApplierBatchTest extends ShardApplierFixture {
    private ShardApplier applier;

    @BeforeEach
    void open() {
        applier = applier(EntryLevels.SUPPORTED);
    }

    @Test
    void shouldApplyABatchInOrderDeduplicatingAResendInsideIt() {
        byte[] declare = declare(1);
        byte[] batch = EntryBatch.encode(List.of(
                declare,
                publish(2, 7, 1, 3),
                publish(3, 8, 1, 2),
                publish(4, 7, 2, 5),     // a resend of 7's 2 and 3 with new ones after them
                publish(5, 8, 3, 3)));
        applier.applyLogEntry(batch, 10).join();
        BrokerQueue queue = queues.get("orders");
        assertEquals(List.of("7:1", "7:2", "7:3", "8:1", "8:2", "7:4", "7:5", "8:3"), stored(queue));
    }

    @Test
    void shouldSkipAnEntryItCannotReadAndApplyTheRestOfTheBatch() {
        byte[] declare = declare(1);
        byte[] damaged = publish(3, 8, 1, 2);
        damaged = java.util.Arrays.copyOf(damaged, damaged.length - 3);
        applier.applyLogEntry(EntryBatch.encode(List.of(declare, publish(2, 7, 1, 2), damaged, publish(4, 7, 3, 3))), 10).join();
        assertEquals(List.of("7:1", "7:2", "7:3"), stored(queues.get("orders")));
    }
}
