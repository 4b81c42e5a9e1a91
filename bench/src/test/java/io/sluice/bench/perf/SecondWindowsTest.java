package io.sluice.bench.perf;

import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

class SecondWindowsTest {
    private static final long ORIGIN = 5_000_000_000L;
    private static final long SECOND = 1_000_000_000L;

    @Test
    void shouldPutEachEventInTheWindowOfItsWholeSecondsSinceTheOrigin() {
        SecondWindows windows = new SecondWindows(ORIGIN);
        windows.record(ORIGIN);
        windows.record(ORIGIN + SECOND - 1);
        windows.record(ORIGIN + SECOND);
        windows.record(ORIGIN + 3 * SECOND + 7);

        assertArrayEquals(new long[] {2, 1, 0, 1}, windows.perSecond());
    }

    @Test
    void shouldCountAnEventBeforeTheOriginInTheFirstWindow() {
        SecondWindows windows = new SecondWindows(ORIGIN);
        windows.record(ORIGIN - 10);

        assertArrayEquals(new long[] {1}, windows.perSecond());
    }

    @Test
    void shouldFindTheSecondWithTheFewestEventsAmongTheFullWindowsOnly() {
        SecondWindows windows = new SecondWindows(ORIGIN);
        recordMany(windows, 0, 100, 10);
        recordMany(windows, 1, 40, 10);
        recordMany(windows, 2, 90, 10);
        recordMany(windows, 3, 5, 10); // the last, partial second: the run ends half-way through it

        SecondWindows.Worst worst = windows.worst(ORIGIN + 3 * SECOND + SECOND / 2);

        assertEquals(3, worst.windows());
        assertEquals(40, worst.lowestRate());
        assertEquals(1, worst.lowestAt());
    }

    @Test
    void shouldCountAFullSecondWithoutEventsAsARateOfZero() {
        SecondWindows windows = new SecondWindows(ORIGIN);
        recordMany(windows, 0, 100, 10);
        recordMany(windows, 2, 100, 10);

        assertEquals(new SecondWindows.Worst(3, 0, 1, 10, 0), windows.worst(ORIGIN + 3 * SECOND),
                "second 1 is the worst, with no events; the p99 ties go to the first second");
    }

    @Test
    void shouldFindTheSecondWithTheHighestP99AndSkipSecondsWithoutLatencies() {
        SecondWindows windows = new SecondWindows(ORIGIN);
        recordMany(windows, 0, 1000, 2_000);
        recordMany(windows, 2, 980, 2_000);
        recordMany(windows, 2, 20, 300_000); // 2 % of second 2 stalled for 300 ms: its p99 is the stall
        recordMany(windows, 3, 1000, 1_000);

        SecondWindows.Worst worst = windows.worst(ORIGIN + 4 * SECOND);

        assertEquals(2, worst.highestP99At());
        assertEquals(300_000, worst.highestP99Micros(), 300_000 * 0.01);
        assertEquals(1, worst.lowestAt(), "second 1 had no receipts at all");
        long[] p99 = windows.p99PerSecondMicros();
        assertEquals(0, p99[1]);
        assertEquals(2_000, p99[0], 2_000 * 0.01);
    }

    @Test
    void shouldReportNoWorstWindowForARunShorterThanOneSecond() {
        SecondWindows windows = new SecondWindows(ORIGIN);
        recordMany(windows, 0, 100, 10);

        SecondWindows.Worst worst = windows.worst(ORIGIN + SECOND - 1);

        assertEquals(new SecondWindows.Worst(0, -1, -1, -1, -1), worst);
        assertArrayEquals(new long[] {100}, windows.perSecond(), "the partial second is still in the series");
    }

    @Test
    void shouldNeverReportAWindowsP99AboveTheRunsMaximumRecordedAtTheRunsPrecision() {
        SecondWindows windows = new SecondWindows(ORIGIN);
        Histogram run = new Histogram(1, LatencyStats.HIGHEST_MICROS, 3);
        for (long micros : new long[] {601_087, 99_999, 7}) {
            windows.record(ORIGIN, micros);
            run.recordValue(micros);
        }

        assertEquals(run.getMaxValue(), windows.p99PerSecondMicros()[0]);
    }

    /** {@code count} events spread over second {@code second}, each with latency {@code micros}. */
    private static void recordMany(SecondWindows windows, int second, int count, long micros) {
        for (int i = 0; i < count; i++) {
            windows.record(ORIGIN + second * SECOND + i * (SECOND / count), micros);
        }
    }
}
