package io.sluice.client;

import io.sluice.client.internal.CompletionBacklog;
import io.sluice.client.internal.SerialExecutor;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * One {@link Producer}'s in-flight window and the ordered completion of its messages' futures. Thread-safe: senders
 * take slots, the network thread settles messages, a callback thread completes their futures.
 *
 * <p>A message holds its slot until the network thread settles it (a confirm, an error, or giving up on it), not until
 * its future completes. Rule "settlements wait in a bounded queue": settled messages count in a
 * {@link CompletionBacklog} from before their slots are freed until their futures complete, and a sender waits while
 * maxInFlight of them are queued (behind a callback that takes its time), holding no slot meanwhile, so the queue stays
 * under twice maxInFlight. A callback of the producer's own futures never waits for the queue behind it, which moves
 * only once it returns; past twice maxInFlight queued, its send is refused. The same holds for a callback of any
 * producer's futures, and on the network thread: a callback of producer A sending through B must not wait for B's
 * queue, which may wait behind B's callback sending through A.
 */
final class ProducerInFlight {
    /** How many producers' settlements the current thread is completing (nested when callbacks run inline). */
    private static final ThreadLocal<int[]> SETTLING = ThreadLocal.withInitial(() -> new int[1]);

    /** For messages. */
    private final String queue;
    private final int maxInFlight;
    /** One per unsettled message, taken by the sender, given back by the network thread as it settles the message. */
    private final Semaphore slots;
    /** The settled messages whose futures {@link #settlements} has yet to complete. */
    private final CompletionBacklog backlog;
    /** Completes the futures one task after the other, in the order the network thread settled them. */
    private final SerialExecutor settlements;

    ProducerInFlight(String queue, int maxInFlight, SerialExecutor settlements) {
        this.queue = queue;
        this.maxInFlight = maxInFlight;
        this.slots = new Semaphore(maxInFlight);
        this.backlog = new CompletionBacklog(maxInFlight);
        this.settlements = settlements;
    }

    /** Whether the calling thread runs this producer's callbacks: a wait there for a later settlement never ends. */
    boolean onOwnCallback() {
        return settlements.drainingOnCurrentThread();
    }

    /**
     * Whether a send from the calling thread must not wait for this producer's queued settlements: it runs this
     * producer's callbacks, or another producer's while this one has settlements queued (which may be behind a callback
     * that waits for the caller's). The thread-local is read only when something is queued, off a sender's fast path.
     */
    boolean mayNotWaitForSettlements() {
        return settlements.drainingOnCurrentThread() || backlog.queued() > 0 && SETTLING.get()[0] > 0;
    }

    /** On the network thread, which must not wait: takes a slot now, or returns why not. */
    SluiceException takeOnNetworkThread() {
        if (backlog.queued() >= 2L * maxInFlight || !slots.tryAcquire()) {
            return new SluiceException("sendAsync to queue " + queue + " from the network thread found all " + maxInFlight
                    + " in-flight slots taken, or twice as many settlements queued for this producer's callbacks; it"
                    + " cannot wait there for a confirm, which that thread delivers", null);
        }
        return null;
    }

    /**
     * From a callback ({@link #mayNotWaitForSettlements}): waits for a slot, which the network thread frees, but not for
     * the settlements queued, which may complete only once the callback returns; returns why not past twice maxInFlight
     * of them, else null.
     */
    SluiceException takeOnCallback() throws InterruptedException {
        slots.acquire();
        if (backlog.queued() >= 2L * maxInFlight) {
            slots.release();
            String whose = onOwnCallback() ? "this producer's own futures" : "another producer's futures";
            return new SluiceException("sendAsync to queue " + queue + " from a callback of " + whose + " found twice"
                    + " maxInFlight " + maxInFlight + " settlements queued for this producer: it cannot wait there for them"
                    + " to complete, as they may do only after that callback returns", null);
        }
        return null;
    }

    /**
     * Takes a slot once fewer than maxInFlight settlements wait for their futures, within {@code timeoutNanos}
     * (Long.MAX_VALUE: for good); false if the time ran out. No slot is held while it waits for the settlements, so a
     * callback that sends, and so waits for a slot, is not held up by a sender that waits for it to return.
     */
    boolean take(long timeoutNanos) throws InterruptedException {
        long start = System.nanoTime();
        while (true) {
            if (!backlog.awaitRoom(remainingNanos(start, timeoutNanos))) {
                return false;
            }
            if (timeoutNanos == Long.MAX_VALUE) {
                slots.acquire();
            } else if (!slots.tryAcquire(remainingNanos(start, timeoutNanos), TimeUnit.NANOSECONDS)) {
                return false;
            }
            if (!backlog.full()) {
                return true;
            }
            slots.release(); // settled meanwhile while a callback runs: wait for the settlements again, slot-free
        }
    }

    private static long remainingNanos(long start, long timeoutNanos) {
        return timeoutNanos == Long.MAX_VALUE ? Long.MAX_VALUE : Math.max(0, timeoutNanos - (System.nanoTime() - start));
    }

    /** Gives back the slot of a message that was never settled here (refused before it was queued, or cancelled). */
    void giveBack() {
        slots.release();
    }

    /**
     * Frees the slots of settled messages and completes their {@code futures} (with {@code failure}, if not null) where
     * callbacks run, after those settled before. They count in the backlog from before their slots are freed until the
     * last of them is completed, so a sender that takes a freed slot sees them queued.
     */
    void settle(List<CompletableFuture<Void>> futures, Throwable failure) {
        backlog.added(futures.size());
        slots.release(futures.size());
        settlements.execute(() -> {
            int[] settling = SETTLING.get();
            settling[0]++;
            try {
                for (CompletableFuture<Void> future : futures) {
                    if (failure == null) {
                        future.complete(null);
                    } else {
                        future.completeExceptionally(failure);
                    }
                }
            } finally {
                settling[0]--;
                backlog.completed(futures.size()); // the batch counts until its last future is completed
            }
        });
    }
}
