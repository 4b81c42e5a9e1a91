package io.sluice.broker.admin;

import io.sluice.broker.queue.QueueSnapshot;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Rule R1 of {@link QueueRates}, on a hand-driven clock. */
class QueueRatesTest {
    private final AtomicLong nanos = new AtomicLong(1_000_000_000L);
    private final QueueRates rates = new QueueRates(nanos::get);

    private static QueueSnapshot.Counters counters(long published, long delivered, long acked) {
        return new QueueSnapshot.Counters(published, published, delivered, 0, acked, 0, 0, 0, 0, 0, 0, 0, 0);
    }

    @Test
    void shouldGiveNoRateBeforeTheSecondSample() {
        assertEquals(QueueRates.Rates.NONE, rates.of("q"));
        rates.record("q", counters(100, 50, 40));
        assertEquals(QueueRates.Rates.NONE, rates.of("q"));
    }

    @Test
    void shouldDivideTheGrowthOfEachCounterByTheTimeBetweenTheLastTwoSamples() {
        rates.record("q", counters(100, 50, 40));
        nanos.addAndGet(5_000_000_000L);
        rates.record("q", counters(600, 300, 290));
        assertEquals(new QueueRates.Rates(100, 50, 50, 5000), rates.of("q"));
        nanos.addAndGet(2_000_000_000L);
        rates.record("q", counters(600, 310, 300));
        assertEquals(new QueueRates.Rates(0, 5, 5, 2000), rates.of("q"), "only the last pair counts");
    }

    @Test
    void shouldStartAfreshWhenACounterWentDown() {
        rates.record("q", counters(100, 50, 40));
        nanos.addAndGet(5_000_000_000L);
        rates.record("q", counters(3, 0, 0)); // deleted and declared again between two samples
        assertEquals(QueueRates.Rates.NONE, rates.of("q"));
        nanos.addAndGet(5_000_000_000L);
        rates.record("q", counters(13, 0, 0));
        assertEquals(new QueueRates.Rates(2, 0, 0, 5000), rates.of("q"));
    }

    @Test
    void shouldKeepQueuesApart() {
        rates.record("a", counters(0, 0, 0));
        rates.record("b", counters(0, 0, 0));
        nanos.addAndGet(1_000_000_000L);
        rates.record("a", counters(10, 0, 0));
        rates.record("b", counters(0, 0, 7));
        assertEquals(new QueueRates.Rates(10, 0, 0, 1000), rates.of("a"));
        assertEquals(new QueueRates.Rates(0, 0, 7, 1000), rates.of("b"));
    }
}
