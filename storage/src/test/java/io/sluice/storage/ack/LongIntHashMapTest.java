package io.sluice.storage.ack;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

class LongIntHashMapTest {
    @Property(tries = 200)
    void shouldMatchHashMapUnderPutRemoveAndRangeRemoval(@ForAll long seed) {
        Random random = new Random(seed);
        LongIntHashMap map = new LongIntHashMap();
        LongLongHashMap longMap = new LongLongHashMap();
        Map<Long, Integer> model = new HashMap<>();
        for (int op = 0; op < 2000; op++) {
            long key = random.nextInt(500) + ((long) random.nextInt(3) << 32);
            int dice = random.nextInt(10);
            if (dice < 5) {
                int value = random.nextInt();
                map.put(key, value);
                longMap.put(key, value);
                model.put(key, value);
            } else if (dice < 9) {
                assertEquals(model.remove(key) != null, map.remove(key));
                longMap.remove(key);
            } else {
                long to = key + random.nextInt(50);
                int expected = (int) model.keySet().stream().filter(k -> k >= key && k <= to).count();
                model.keySet().removeIf(k -> k >= key && k <= to);
                assertEquals(expected, map.removeRange(key, to));
                longMap.removeRange(key, to);
            }
            assertEquals(model.size(), map.size());
            assertEquals(model.size(), longMap.size());
            assertEquals(model.getOrDefault(key, -7), map.get(key, -7));
            assertEquals(model.containsKey(key) ? (long) model.get(key) : -7L, longMap.get(key, -7L));
        }
        Map<Long, Integer> seen = new HashMap<>();
        map.forEach(seen::put);
        assertEquals(model, seen);
    }
}
