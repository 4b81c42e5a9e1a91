package io.sluice.storage.ack;

import java.lang.reflect.Field;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Holds an ack journal's mapping lock from another thread, as a force does for the length of its msync,
 * until closed: a stand-in for a slow msync. Reached by reflection because nothing else needs the lock.
 */
public final class HeldForce implements AutoCloseable {
    private final CountDownLatch release = new CountDownLatch(1);
    private final Thread holder;

    private HeldForce(Lock lock) throws InterruptedException {
        CountDownLatch held = new CountDownLatch(1);
        holder = new Thread(() -> hold(lock, held), "slow-force");
        holder.start();
        assertTrue(held.await(10, TimeUnit.SECONDS), "the stand-in force took the mapping's lock");
    }

    public static HeldForce of(AckJournal journal) throws ReflectiveOperationException, InterruptedException {
        Field field = AckJournal.class.getDeclaredField("mappingLock");
        field.setAccessible(true);
        return new HeldForce((Lock) field.get(journal));
    }

    private void hold(Lock lock, CountDownLatch held) {
        lock.lock();
        try {
            held.countDown();
            awaitRelease();
        } finally {
            lock.unlock();
        }
    }

    private void awaitRelease() {
        try {
            release.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
public void close() throws InterruptedException {
        release.countDown();
        holder.join(TimeUnit.SECONDS.toMillis(30));
    }
}
