package io.sluice.client.internal;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

class SequenceWindowTest {

    /** Random adds, confirms of ranges (mostly from the oldest end), single removals and clears, against a TreeMap. */
    @Test
    void shouldBehaveLikeASortedMapOfConsecutiveSequences() {
        for (long seed = 1; seed <= 200; seed++) {
            Random random = new Random(seed);
            // Odd seeds cap the ring at 8 slots, so values are pushed out of it into the sorted map too.
            SequenceWindow<String> window = seed % 2 == 1
                    ? new SequenceWindow<>(1 + random.nextInt(8), 8) : new SequenceWindow<>(1 + random.nextInt(8));
            TreeMap<Long, String> model = new TreeMap<>();
            long next = 1 + random.nextInt(1000);
            for (int step = 0; step < 2000; step++) {
                int op = random.nextInt(10);
                if (op < 5) {
                    window.add(next, "m" + next);
                    model.put(next, "m" + next);
                    next++;
                } else if (op < 8 && !model.isEmpty()) {
                    long from = op == 5 ? model.firstKey() : model.firstKey() + random.nextInt(20) - 3;
                    long to = from + random.nextInt(30);
                    List<String> removed = new ArrayList<>();
                    window.removeRange(from, to, removed::add);
                    Map<Long, String> expected = model.subMap(from, true, to, true);
                    assertEquals(List.copyOf(expected.values()), removed, "seed " + seed + " step " + step);
                    expected.clear();
                } else if (op == 8 && !model.isEmpty()) {
                    long sequence = model.firstKey() + random.nextInt(40) - 5;
                    assertEquals(model.remove(sequence), window.remove(sequence), "seed " + seed);
                } else if (random.nextInt(20) == 0) {
                    window.clear();
                    model.clear();
                }
                assertEquals(model.size(), window.size(), "seed " + seed + " step " + step);
                long probe = next - 1 - random.nextInt(50);
                assertEquals(model.get(probe), window.get(probe), "seed " + seed + " get " + probe);
            }
            List<String> all = new ArrayList<>();
            window.forEach(all::add);
            assertEquals(List.copyOf(model.values()), all, "seed " + seed);
        }
    }

    @Test
    void shouldRefuseASequenceThatDoesNotFollowTheNewest() {
        SequenceWindow<String> window = new SequenceWindow<>(4);
        window.add(7, "a");
        window.add(8, "b");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> window.add(10, "c"));
        assertEquals("sequence 10 does not follow 8", e.getMessage());
        assertNull(window.get(9));
    }

    @Test
    void shouldKeepAnOldUnsettledValueWithoutGrowingTheRingPastItsLimit() {
        SequenceWindow<Long> window = new SequenceWindow<>(2, 64);
        for (long s = 1; s <= 10_000; s++) {
            window.add(s, s);
            if (s > 1) {
                window.remove(s - 1 == 1 ? 0 : s - 1); // everything but sequence 1 settles at once
            }
        }
        assertEquals(2, window.size());
        assertEquals(64, window.ringSlots(), "one value that stays does not make the ring grow with every sequence");
        assertEquals(1L, window.get(1));
        assertEquals(10_000L, window.get(10_000));
        window.remove(1);
        List<Long> left = new ArrayList<>();
        window.forEach(left::add);
        assertEquals(List.of(10_000L), left);
    }

    /**
     * A confirm of the range ending at Long.MAX_VALUE (a named producer continuing after a last stored sequence near
     * it) removes the range: a loop over the range stepping past Long.MAX_VALUE to Long.MIN_VALUE, still not above its
     * end, would spin the client's network thread forever.
     */
    @Test
    @Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // the spin ignores an interrupt
    void shouldRemoveARangeEndingAtTheTopOfTheSequenceSpace() {
        SequenceWindow<String> window = new SequenceWindow<>(4);
        window.add(Long.MAX_VALUE - 1, "a");
        window.add(Long.MAX_VALUE, "b");
        List<String> removed = new ArrayList<>();
        window.removeRange(Long.MAX_VALUE - 1, Long.MAX_VALUE, removed::add);
        assertEquals(List.of("a", "b"), removed);
        assertEquals(0, window.size());
    }

    /** A range wholly below the oldest, near Long.MIN_VALUE, removes nothing: {@code to - oldest} must not overflow. */
    @Test
    void aRangeFarBelowTheOldestRemovesNothing() {
        SequenceWindow<String> window = new SequenceWindow<>(4);
        window.add(5, "a");
        window.add(6, "b");
        List<String> removed = new ArrayList<>();
        window.removeRange(Long.MIN_VALUE, Long.MIN_VALUE + 1, removed::add);
        assertEquals(List.of(), removed);
        assertEquals(2, window.size());
    }
}
