package io.sluice.broker.queue;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

class InFlightDeliveriesTest {
    private static ConsumerSession.Delivery at(long nanos) {
        return new ConsumerSession.Delivery(nanos, 10, 0);
    }

    private static InFlightDeliveries holding(long... ids) {
        InFlightDeliveries d = new InFlightDeliveries();
        for (long id : ids) {
            d.put(id, at(id));
        }
        return d;
    }

    private static List<Long> removeRange(InFlightDeliveries d, long from, long to) {
        List<Long> removed = new ArrayList<>();
        int count = d.removeRange(from, to, (id, delivery) -> {
            assertEquals(id, delivery.deliveredAtNanos(), "the delivery of the id handed over");
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
        d.put(30, at(100));
        d.put(10, at(300));
        d.put(20, at(50));
        d.put(40, at(199));

        assertArrayEquals(new long[] {20, 30, 40}, d.removeDeliveredBefore(200));
        assertArrayEquals(new long[] {10}, d.removeAll());
        assertEquals(0, d.size());
    }
}
