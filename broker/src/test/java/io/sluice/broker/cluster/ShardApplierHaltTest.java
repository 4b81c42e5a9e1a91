package io.sluice.broker.cluster;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A node that meets a log entry in a format above what it supports stops applying the log instead of skipping the entry
 * (and holding different data from the nodes that applied it): the applier throws before it applies anything of the
 * log entry, a batch's earlier entries included.
 */
class ShardApplierHaltTest extends ShardApplierFixture {
    private static byte[] publish(long call, int sequence) {
        return publish(call, 7, sequence, sequence);
    }

    /** A shard entry of {@code version}, as a newer broker would write one: a version byte and then whatever it says. */
    private static byte[] futureEntry(int version) {
        byte[] entry = declare(99);
        entry[0] = (byte) version;
        return entry;
    }

    @Test
    void shouldStopAtAnEntryOfAnUnknownVersionInsteadOfSkippingIt() {
        ShardApplier applier = applier(EntryLevels.SUPPORTED);
        EntryLevels.EntryTooNew halt = assertThrows(EntryLevels.EntryTooNew.class,
                () -> applier.applyLogEntry(futureEntry(42), 17));
        assertEquals(42, halt.version());
        assertTrue(halt.getMessage().contains("17") && halt.getMessage().contains("42") && halt.getMessage().contains("upgrade"),
                halt.getMessage());
    }

    @Test
    void shouldApplyNothingOfABatchHoldingAnEntryItDoesNotSupport() {
        ShardApplier applier = applier(EntryLevels.SUPPORTED);
        byte[] batch = EntryBatch.encode(List.of(declare(1), publish(2, 1), futureEntry(9)));
        assertThrows(EntryLevels.EntryTooNew.class, () -> applier.applyLogEntry(batch, 5));
        assertNull(queues.get("orders"), "the batch's declare, before the entry it cannot apply, was applied");
    }

    @Test
    void shouldStopAtABatchOnANodeThatSupportsOnlyLevelFour() {
        ShardApplier applier = applier(4);
        byte[] batch = EntryBatch.encode(List.of(declare(1), publish(2, 1)));
        EntryLevels.EntryTooNew halt = assertThrows(EntryLevels.EntryTooNew.class, () -> applier.applyLogEntry(batch, 5));
        assertEquals(EntryBatch.VERSION, halt.version());
        assertNull(queues.get("orders"));
        applier.applyLogEntry(declare(3), 6).join(); // an entry of level 1 it applies
        assertTrue(queues.get("orders") != null);
    }

    @Test
    void shouldStillSkipADamagedEntryOfAKnownVersionAsEveryNodeDoes() {
        ShardApplier applier = applier(EntryLevels.SUPPORTED);
        byte[] damaged = publish(2, 1);
        damaged = java.util.Arrays.copyOf(damaged, damaged.length - 3);
        applier.applyLogEntry(damaged, 5).join();
        applier.applyLogEntry(declare(1), 6).join();
        assertTrue(queues.get("orders") != null);
    }

    @Test
    void shouldRaiseTheLevelWithALevelEntryAndStopAtOneAboveWhatItSupports() {
        ShardApplier applier = applier(4);
        applier.applyLogEntry(EntryLevels.encodeLevelEntry(OTHER_NODE, 1, 4), 3).join();
        EntryLevels.EntryTooNew halt = assertThrows(EntryLevels.EntryTooNew.class,
                () -> applier.applyLogEntry(EntryLevels.encodeLevelEntry(OTHER_NODE, 2, 5), 4));
        assertEquals(EntryLevels.LEVEL_ENTRY_VERSION, halt.version());
    }
}
