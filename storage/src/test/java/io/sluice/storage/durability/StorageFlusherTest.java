package io.sluice.storage.durability;

import org.junit.jupiter.api.Test;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertTrue;

class StorageFlusherTest {

    /**
     * The race of rule "no lost wake-up", made to happen every time: an append lands (and calls wakeUp) while
     * the flusher is between finding nothing to do and announcing that it parks. The flusher parks for an hour
     * here, so only the second look can flush it in time.
     */
    @Test
    void shouldFlushAnAppendThatRacedWithParkingWithoutWaitingForTheIdleTimeout() throws InterruptedException {
        AtomicReference<StorageFlusher> flusher = new AtomicReference<>();
        AtomicBoolean appended = new AtomicBoolean();
        AtomicInteger emptyLooks = new AtomicInteger();
        CountDownLatch flushed = new CountDownLatch(1);
        StorageFlusher subject = new StorageFlusher(now -> {
            if (appended.getAndSet(false)) {
                flushed.countDown();
                return true;
            }
            if (emptyLooks.incrementAndGet() == 1) {
                // The first look found nothing; the append and its wake-up come before the park is announced.
                appended.set(true);
                flusher.get().wakeUp();
            }
            return false;
        }, () -> false, TimeUnit.HOURS.toNanos(1));
        flusher.set(subject);
        subject.start();
        try {
            assertTrue(flushed.await(30, TimeUnit.SECONDS), "the raced append was flushed without the idle timeout");
        } finally {
            subject.close();
        }
    }

    @Test
    void shouldWakeUpForAnAppendWhileParked() throws InterruptedException {
        AtomicBoolean appended = new AtomicBoolean();
        AtomicInteger looks = new AtomicInteger();
        CountDownLatch flushed = new CountDownLatch(1);
        StorageFlusher subject = new StorageFlusher(now -> {
            looks.incrementAndGet();
            if (appended.getAndSet(false)) {
                flushed.countDown();
                return true;
            }
            return false;
        }, () -> false, TimeUnit.HOURS.toNanos(1));
        subject.start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (looks.get() < 2) { // both looks done: the flusher is parking or parked
                assertTrue(System.nanoTime() < deadline, "the flusher looked for work twice before parking");
                Thread.onSpinWait();
            }
            appended.set(true);
            subject.wakeUp();
            assertTrue(flushed.await(30, TimeUnit.SECONDS), "the wake-up reached the parked flusher");
        } finally {
            subject.close();
        }
    }
}
