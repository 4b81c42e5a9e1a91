package io.sluice.broker.cluster;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ApplyBudgetTest {
    @Test
    @Timeout(30)
    void anEntryThatDoesNotFitWaitsUntilEarlierOnesAreApplied() throws Exception {
        ApplyBudget budget = new ApplyBudget(100);
        budget.acquire(60);
        budget.acquire(40);
        AtomicBoolean acquired = new AtomicBoolean();
        CountDownLatch started = new CountDownLatch(1);
        Thread updater = new Thread(() -> {
            started.countDown();
            try {
                budget.acquire(30);
                acquired.set(true);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        updater.start();
        started.await();
        // The waiter is in wait() once its thread is WAITING; until then it has not acquired either.
        while (updater.getState() != Thread.State.WAITING) {
            assertFalse(acquired.get(), "30 more bytes fit in a budget of 100 holding 100");
            Thread.onSpinWait();
        }
        assertFalse(acquired.get());
        budget.release(20); // 80 + 30 > 100: still waiting
        assertEquals(Thread.State.WAITING, waitUntilWaitingAgain(updater));
        assertFalse(acquired.get());
        budget.release(40); // 40 + 30 fits
        updater.join(10_000);
        assertTrue(acquired.get());
        assertEquals(70, budget.inFlightBytes());
    }

    @Test
    void anEntryLargerThanTheBudgetGoesAloneWhenNothingElseIsInFlight() throws Exception {
        ApplyBudget budget = new ApplyBudget(100);
        budget.acquire(500);
        assertEquals(500, budget.inFlightBytes());
        budget.release(500);
        assertEquals(0, budget.inFlightBytes());
    }

    @Test
    void theBudgetIsASixteenthOfTheHeapAndHoldsTwoOfTheLargestEntries() {
        assertEquals(64L << 20, ApplyBudget.forHeap(1L << 30, 1L << 20).maxBytes());
        assertEquals(16L << 20, ApplyBudget.forHeap(32L << 20, 8L << 20).maxBytes());
    }

    @Test
    void ratisLogMemoryIsSizedFromTheHeap() {
        long appender = 4L << 20;
        assertEquals(32L << 20, RaftSettings.logCacheBytes(256L << 20, appender));
        assertEquals(200L << 20, RaftSettings.logCacheBytes(8L << 30, appender), "never above Ratis's default");
        assertEquals(appender, RaftSettings.logCacheBytes(16L << 20, appender), "at least one append");
        assertEquals(16L << 20, RaftSettings.logQueueBytes(256L << 20, appender));
        assertEquals(64L << 20, RaftSettings.logQueueBytes(8L << 30, appender), "never above Ratis's default");
    }

    private static Thread.State waitUntilWaitingAgain(Thread t) throws InterruptedException {
        // notifyAll wakes the waiter, which finds it still does not fit and waits again.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        Thread.State state;
        do {
            state = t.getState();
        } while (state != Thread.State.WAITING && System.nanoTime() < deadline);
        return state;
    }
}
