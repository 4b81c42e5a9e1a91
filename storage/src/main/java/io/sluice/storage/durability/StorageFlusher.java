package io.sluice.storage.durability;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongPredicate;
import java.util.function.BooleanSupplier;

/**
 * The store's one background thread, {@code sluice-storage-flusher}: group commit and reclaim.
 *
 * <p>Group commit: the thread loops over the queues, and for each that has appends not yet durable
 * it forces the segment once, then reports everything appended up to then as durable. Appends that
 * arrive while a force is under way wait for the next one, so the batch size adapts by itself to the
 * sync latency and the append rate: one sync per 0.3–2 ms on this hardware, whatever the rate. The
 * appending threads never sync; they only wake this thread when it is parked.
 *
 * <p>Rule "no lost wake-up": an append wakes this thread only if it has announced that it parks, so after
 * announcing it the thread looks for work once more before parking. An append that read the flag before it was
 * set is seen by that second look (both sides write, then read, volatile fields); one after it unparks the thread.
 * Without the second look an append landing between "nothing to do" and the announcement waited for the idle
 * timeout, and so did its confirm.
 */
public final class StorageFlusher implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StorageFlusher.class);
    private static final long IDLE_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

    private final LongPredicate flushAll;
    private final BooleanSupplier reclaimAll;
    private final long idleParkNanos;
    private final Thread thread;
    private final AtomicBoolean parked = new AtomicBoolean();
    private volatile boolean running = true;

    /**
     * @param flushAll   called with the current nano time; forces what is due and returns whether it did any work
     * @param reclaimAll runs reclaim on every queue; returns whether it did any work
     */
    public StorageFlusher(LongPredicate flushAll, BooleanSupplier reclaimAll) {
        this(flushAll, reclaimAll, IDLE_PARK_NANOS);
    }

    /** As above, parking at most {@code idleParkNanos} when there is nothing to do (tests make it long). */
    StorageFlusher(LongPredicate flushAll, BooleanSupplier reclaimAll, long idleParkNanos) {
        this.idleParkNanos = idleParkNanos;
        this.flushAll = flushAll;
        this.reclaimAll = reclaimAll;
        this.thread = new Thread(this::run, "sluice-storage-flusher");
        thread.setDaemon(true);
    }

    public void start() {
        thread.start();
    }

    /** Wakes the thread if it is parked; cheap (no syscall) when it is busy. */
    public void wakeUp() {
        if (parked.get() && parked.compareAndSet(true, false)) {
            LockSupport.unpark(thread);
        }
    }

    private void run() {
        long lastReclaim = 0;
        while (running) {
            boolean worked;
            try {
                worked = flushAll.test(System.nanoTime());
                long now = System.nanoTime();
                if (now - lastReclaim > TimeUnit.MILLISECONDS.toNanos(2)) {
                    lastReclaim = now;
                    worked |= reclaimAll.getAsBoolean();
                }
            } catch (RuntimeException | Error e) {
                LOG.error("The storage flusher failed; it retries in 100 ms.", e);
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
                continue;
            }
            if (!worked) {
                parked.set(true);
                try {
                    if (!flushAll.test(System.nanoTime())) { // the second look (rule "no lost wake-up")
                        LockSupport.parkNanos(this, idleParkNanos);
                    }
                } catch (RuntimeException | Error e) {
                    LOG.error("The storage flusher failed; it retries in 100 ms.", e);
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
                } finally {
                    parked.set(false);
                }
            }
        }
    }

    @Override
    public void close() {
        running = false;
        LockSupport.unpark(thread);
        try {
            thread.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
