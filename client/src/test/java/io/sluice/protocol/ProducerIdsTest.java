package io.sluice.protocol;

import org.junit.jupiter.api.Test;

import java.util.PrimitiveIterator;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertEquals;

class ProducerIdsTest {
    /**
     * Every id the broker keeps for its own records (Long.MIN_VALUE and the five above it) is drawn again, as 0 is:
     * an unnamed producer that drew one of them would have every publish refused with PRODUCER_FENCED ("reserved for
     * the broker's own records").
     */
    @Test
    void aRandomIdIsNeverZeroNorReserved() {
        PrimitiveIterator.OfLong draws = LongStream.concat(
                LongStream.of(0), LongStream.rangeClosed(Long.MIN_VALUE, Long.MIN_VALUE + 5)).iterator();
        long id = ProducerIds.random(() -> draws.hasNext() ? draws.nextLong() : 42);
        assertEquals(42, id);
    }
}
