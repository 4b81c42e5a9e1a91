package io.sluice.broker.metrics;

import io.micrometer.core.instrument.MockClock;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** The compact histogram counts, sums and keeps its maximum as the Prometheus registry's timers did. */
class LatencyHistogramTest {
    private final MockClock clock = new MockClock();
    private final LatencyHistogram histogram = new LatencyHistogram(LatencyHistogram.boundsMillis(0.25, 1, 10), clock);

    @Test
    void shouldCountASampleInTheFirstBucketWhoseBoundIsNotBelowIt() {
        histogram.recordNanos(0);
        histogram.recordNanos(250_000); // on the bound: le="2.5E-4" includes it
        histogram.recordNanos(250_001);
        histogram.recordNanos(1_000_000);
        histogram.recordNanos(9_999_999);
        histogram.recordNanos(10_000_001); // past the last bound: +Inf only
        histogram.recordNanos(-5); // ignored, as a timer ignores negative amounts

        assertArrayEquals(new long[] {2, 2, 1, 1}, histogram.bucketCounts());
        assertArrayEquals(new double[] {0.00025, 0.001, 0.01, Double.POSITIVE_INFINITY}, histogram.upperBoundsSeconds());
        assertEquals((250_000 + 250_001 + 1_000_000 + 9_999_999 + 10_000_001) / 1e9, histogram.sumSeconds(), 1e-12);
        assertEquals(0.010000001, histogram.maxSeconds(), 1e-12);
    }

    @Test
    void shouldForgetTheMaximumAfterThreeStepsAsTheRegistrysTimersDo() {
        histogram.recordNanos(5_000_000);
        clock.add(Duration.ofMinutes(2));
        assertEquals(0.005, histogram.maxSeconds(), 1e-12, "still within the window");
        clock.add(Duration.ofMinutes(1).plusMillis(1));
        assertEquals(0, histogram.maxSeconds(), "three steps later the maximum is gone");
        assertArrayEquals(new long[] {0, 0, 1, 0}, histogram.bucketCounts(), "the buckets only grow");
    }
}
