package io.sluice.broker.queue;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class InFlightDeliveriesTest {
    /** Each delivery carries its id in every field, so a hand-over can be checked against the id. */
    private static void putTagged(InFlightDeliveries d, long id) {
        d.put(id, id, (int) (id % 100_000), id + 1);
    }

    private static InFlightDeliveries holding(long... ids) {
        InFlightDeliveries d = new InFlightDeliveries();
        for (long id : ids) {
            putTagged(d, id);
        }
        return d;
    }

    private static List<Long> removeRange(InFlightDeliveries d, long from, long to) {
        List<Long> removed = new ArrayList<>();
        int count = d.removeRange(from, to, (id, bytes, appendedAtMillis) -> {
            assertEquals((int) (id % 100_000), bytes, "the bytes of the id handed over");
            assertEquals(id + 1, appendedAtMillis, "the timestamp of the id handed over");
            removed.add(id);
        });
        assertEquals(removed.size(), count);
        return removed;
    }

    @Test
    void shouldRemoveAShortRangeByWalkingItInIdOrder() {
        InFlightDeliveries d = holding(9, 3, 5, 4, 12);

        assertEquals(List.of(3L, 4L, 5L), removeRange(d, 2, 6));
        assertArrayEquals(new long[] {9, 12}, d.ids());
    }

    @Test
    void shouldRemoveALongRangeBySortingWhatItHolds() {
        InFlightDeliveries d = holding(1_000_000, 7, 500_000_000_000L, 3);

        assertEquals(List.of(3L, 7L, 1_000_000L), removeRange(d, 0, 400_000_000_000L));
        assertArrayEquals(new long[] {500_000_000_000L}, d.ids());
    }

    @Test
    void shouldTakeTheWholeIdSpaceWithoutOverflowing() {
        InFlightDeliveries d = holding(Long.MAX_VALUE - 1, 0, 42);

        assertEquals(List.of(0L, 42L, Long.MAX_VALUE - 1), removeRange(d, 0, Long.MAX_VALUE));
        assertEquals(0, d.size());
        assertEquals(List.of(Long.MAX_VALUE - 1), removeRange(holding(Long.MAX_VALUE - 1), Long.MAX_VALUE - 2, Long.MAX_VALUE));
    }

    @Test
    void shouldHandOverNothingForARangeItDoesNotHoldOrAnInvertedOne() {
        InFlightDeliveries d = holding(1, 2, 3);

        assertEquals(List.of(), removeRange(d, 10, 20));
        assertEquals(List.of(), removeRange(d, 3, 1));
        assertEquals(3, d.size());
    }

    @Test
    void shouldTakeBackExpiredDeliveriesInIdOrderAndKeepTheRest() {
        InFlightDeliveries d = new InFlightDeliveries();
        d.put(30, 100, 1, 0);
        d.put(10, 300, 1, 0);
        d.put(20, 50, 1, 0);
        d.put(40, 199, 1, 0);

        assertArrayEquals(new long[] {20, 30, 40}, d.removeDeliveredBefore(200));
        assertArrayEquals(new long[] {10}, d.removeAll());
        assertEquals(0, d.size());
    }

    @Test
    void shouldRefuseANegativeId() {
        assertThrows(IllegalArgumentException.class, () -> new InFlightDeliveries().put(-1, 0, 0, 0));
    }

    /** Random puts and removals, mostly of consecutive ids as a queue delivers them, against a TreeMap. */
    @Test
    void shouldAgreeWithASortedMapThroughGrowthAndManyRemovals() {
        Random random = new Random(7);
        InFlightDeliveries d = new InFlightDeliveries();
        TreeMap<Long, Long> model = new TreeMap<>();
        long next = (3L << 32) + 17;
        for (int step = 0; step < 200_000; step++) {
            int dice = random.nextInt(100);
            if (dice < 55 || model.isEmpty()) {
                long id = random.nextInt(10) == 0 ? random.nextLong() >>> 1 : next++;
                putTagged(d, id);
                model.put(id, id);
            } else if (dice < 90) {
                Long inside = model.ceilingKey(model.firstKey() + random.nextInt(500));
                long from = random.nextBoolean() || inside == null ? model.firstKey() : inside;
                long to = from + random.nextInt(random.nextInt(20) == 0 ? 5_000 : 130);
                List<Long> expected = new ArrayList<>(model.subMap(from, true, to, true).keySet());
                assertEquals(expected, removeRange(d, from, to), "range " + from + ".." + to);
                model.subMap(from, true, to, true).clear();
            } else if (dice < 95) {
                long deadline = model.firstKey() + random.nextInt(50);
                List<Long> expected = new ArrayList<>();
                for (Map.Entry<Long, Long> e : model.entrySet()) {
                    if (e.getValue() - deadline < 0) {
                        expected.add(e.getKey());
                    }
                }
                expected.forEach(model::remove);
                assertEquals(expected, toList(d.removeDeliveredBefore(deadline)), "expired before " + deadline);
            } else {
                long id = random.nextBoolean() && !model.isEmpty() ? model.lastKey() : random.nextLong() >>> 1;
                List<Long> expected = model.containsKey(id) ? List.of(id) : List.of();
                assertEquals(expected, removeRange(d, id, id), "single " + id);
                model.remove(id);
            }
            assertEquals(model.size(), d.size(), "size after step " + step);
        }
        assertEquals(new ArrayList<>(model.keySet()), toList(d.ids()));
    }

    private static List<Long> toList(long[] ids) {
        List<Long> list = new ArrayList<>(ids.length);
        for (long id : ids) {
            list.add(id);
        }
        return list;
    }
}
