package io.sluice.broker.cluster;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class EntryBatchTest {
    @Test
    void shouldRoundTripItsEntriesInOrder() {
        byte[] a = {ShardEntry.VERSION, 1, 2};
        byte[] b = {ShardEntry.DELIVERED_VERSION, 3};
        byte[] c = {ShardEntry.NAMED_PUBLISH_VERSION, 4, 5, 6};
        byte[] batch = EntryBatch.encode(List.of(a, b, c));
        assertTrue(EntryBatch.isBatch(batch));
        assertFalse(EntryBatch.isBatch(a));
        List<byte[]> decoded = EntryBatch.decode(batch);
        assertEquals(3, decoded.size());
        assertArrayEquals(a, decoded.get(0));
        assertArrayEquals(b, decoded.get(1));
        assertArrayEquals(c, decoded.get(2));
    }

    @Test
    void shouldRefuseADeadLetterAndDamagedBatches() {
        byte[] a = {ShardEntry.VERSION, 1};
        byte[] deadLetter = {ShardEntry.DEAD_LETTER_VERSION, 1};
        assertThrows(IllegalArgumentException.class, () -> EntryBatch.encode(List.of(a, deadLetter)));
        byte[] batch = EntryBatch.encode(List.of(a, a));
        batch[batch.length - 2] = ShardEntry.DEAD_LETTER_VERSION; // the second entry's first byte
        assertThrows(IllegalArgumentException.class, () -> EntryBatch.decode(batch));
        byte[] good = EntryBatch.encode(List.of(a, a));
        assertThrows(IllegalArgumentException.class, () -> EntryBatch.decode(java.util.Arrays.copyOf(good, good.length - 1)));
        assertThrows(IllegalArgumentException.class, () -> EntryBatch.decode(java.util.Arrays.copyOf(good, good.length + 1)));
    }
}
