package io.sluice.storage.ack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.BitSet;
import java.util.Random;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;


class SegmentAckBitmapTest {
    @Example
    void shouldRejectAckAtOrBeyondMessageCountNamingTheLimit() {
        SegmentAckBitmap bitmap = new SegmentAckBitmap();
        bitmap.extendTo(10);
        IllegalArgumentException error = assertThrows(IllegalArgumentException.class, () -> bitmap.ack(10));
        assertTrue(error.getMessage().contains("seq 10") && error.getMessage().contains("0..9"), error.getMessage());
    }

    @Example
    void shouldBeFullyAckedOnlyWhenItHasMessagesAndAllAreAcked() {
        SegmentAckBitmap bitmap = new SegmentAckBitmap();
        assertFalse(bitmap.isFullyAcked());
        bitmap.extendTo(130);
        assertEquals(130, bitmap.ackRange(0, 129));
        assertTrue(bitmap.isFullyAcked());
        bitmap.extendTo(131);
        assertFalse(bitmap.isFullyAcked());
        assertEquals(130, bitmap.firstUnacked());
    }

    @Example
    void shouldHandleSequencesAboveIntRange() {
        SegmentAckBitmap bitmap = new SegmentAckBitmap();
        long count = (1L << 31) + 70; // 256 MiB of words: stays within the test heap
        bitmap.extendTo(count);
        assertTrue(bitmap.ack(count - 1));
        assertEquals(count - 2, bitmap.nextUnacked(count - 2));
        assertEquals(-1, bitmap.nextUnacked(count - 1));
    }

    @Property(tries = 300)
    void shouldMatchBitSetForRandomAcksAndRanges(@ForAll long seed) {
        Random random = new Random(seed);
        SegmentAckBitmap bitmap = new SegmentAckBitmap();
        BitSet model = new BitSet();
        int count = 0;
        for (int op = 0; op < 200; op++) {
            int dice = random.nextInt(10);
            if (dice < 2 || count == 0) {
                count += 1 + random.nextInt(100);
                bitmap.extendTo(count);
            } else if (dice < 6) {
                int seq = random.nextInt(count);
                assertEquals(!model.get(seq), bitmap.ack(seq));
                model.set(seq);
            } else {
                int from = random.nextInt(count);
                int to = Math.min(count - 1, from + random.nextInt(200));
                int before = model.cardinality();
                model.set(from, to + 1);
                assertEquals(model.cardinality() - before, bitmap.ackRange(from, to));
            }
            assertEquals(model.cardinality(), bitmap.ackedCount());
            int from = random.nextInt(count + 1);
            int expected = model.nextClearBit(from);
            assertEquals(expected < count ? expected : -1, bitmap.nextUnacked(from), "nextUnacked from " + from);
            int first = model.nextClearBit(0);
            assertEquals(first < count ? first : -1, bitmap.firstUnacked());
        }
        int truncated = random.nextInt(count + 1);
        bitmap.truncateTo(truncated);
        model.clear(truncated, Integer.MAX_VALUE);
        assertEquals(model.cardinality(), bitmap.ackedCount());
    }
}
