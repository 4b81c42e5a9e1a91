package io.sluice.broker.queue;

import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Random;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SpreadIdsTest {
    @Test
    void shouldGiveEveryIdBackAndKeepDistinctIdsDistinct() {
        Random random = new Random(42);
        Set<Long> keys = new HashSet<>();
        for (int i = 0; i < 100_000; i++) {
            long id = i < 50_000 ? (7L << 32) + i : random.nextLong();
            long key = SpreadIds.spread(id);
            assertEquals(id, SpreadIds.unspread(key), "id " + id);
            assertTrue(keys.add(key), "key of id " + id + " taken twice");
        }
        for (long id : new long[] {0, -1, Long.MIN_VALUE, Long.MAX_VALUE}) {
            assertEquals(id, SpreadIds.unspread(SpreadIds.spread(id)));
        }
    }

    @Test
    void shouldScatterConsecutiveIdsOverTheLowBitsAMapIndexesBy() {
        int mask = 2047; // a 2,048-slot table holding 1,000 consecutive ids
        Set<Integer> slots = new HashSet<>();
        for (long id = 1_000_000; id < 1_001_000; id++) {
            slots.add((int) (SpreadIds.spread(id) ^ (SpreadIds.spread(id) >>> 32)) & mask);
        }
        // Random placement fills about 2048 * (1 - e^(-1000/2048)) = 794 distinct slots; the identity
        // hash would fill 1,000 adjacent ones, one run that every removal shifts.
        assertTrue(slots.size() > 700 && slots.size() < 900, slots.size() + " distinct slots");
    }
}
