package io.sluice.storage.durability;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.segment.SegmentRollCycle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongConsumer;

/**
 * One queue's durability bookkeeping: the written and durable positions, the segments that must be
 * forced before the durable position may pass them, the futures waiting for a position, and the
 * policy of {@link DurabilityMode}.
 *
 * <p>Threads: {@link #appended}, {@link #sealed} run on appending threads under the queue's lock;
 * {@link #flush} runs on the storage flusher only; {@link #whenDurable} on any thread. The positions
 * are volatile; the list of sealed segments and the pending futures have their own monitors, held
 * only to copy or change them, never across a force.
 */
public final class Durability {
    private static final Logger LOG = LoggerFactory.getLogger(Durability.class);

    private final String queueName;
    private final DurabilityMode mode;
    private final long syncIntervalNanos;
    private final SegmentSyncer syncer;
    private final Runnable wakeFlusher;

    private volatile long writtenIndex;
    private volatile long durableIndex;
    private volatile LongConsumer listener;
    /** Segments sealed since the last successful force, which the next force must include. */
    private final List<Integer> sealedUnforced = new ArrayList<>();
    private final PriorityQueue<PendingDurable> pendingFutures = new PriorityQueue<>();
    /** When {@link DurabilityMode#INTERVAL} forces next; flusher thread only. */
    private long nextIntervalSyncNanos;

    /** Everything up to {@code recoveredIndex} was read back from disk, so it counts as durable. */
    public Durability(String queueName, DurabilityMode mode, long syncIntervalMs, SegmentSyncer syncer, Runnable wakeFlusher,
                      long recoveredIndex) {
        this.queueName = queueName;
        this.mode = mode;
        this.syncIntervalNanos = syncIntervalMs * 1_000_000L;
        this.syncer = syncer;
        this.wakeFlusher = wakeFlusher;
        this.writtenIndex = recoveredIndex;
        this.durableIndex = recoveredIndex;
    }

    public DurabilityMode mode() {
        return mode;
    }

    /** The highest id appended. */
    public long writtenIndex() {
        return writtenIndex;
    }

    /** The highest id that is durable under the policy; every id at or below it is too. */
    public long durableIndex() {
        return durableIndex;
    }

    /** An append of {@code index} was written into the mapping; under the queue's lock. */
    public void appended(long index) {
        writtenIndex = index;
        if (mode != DurabilityMode.ALWAYS) {
            durableIndex = index;
        }
    }

    /** {@code segment} was sealed by a roll: the next force must include it. Under the queue's lock. */
    public void sealed(int segment) {
        synchronized (sealedUnforced) {
            sealedUnforced.add(segment);
        }
    }

    /** The callback told, on the flusher thread, each time the durable index advances. */
    public void listener(LongConsumer listener) {
        this.listener = listener;
    }

    /** A future completed (with the id) once {@code id} is durable. */
    public CompletableFuture<Long> whenDurable(long id) {
        if (durableIndex >= id) {
            return CompletableFuture.completedFuture(id);
        }
        CompletableFuture<Long> future = new CompletableFuture<>();
        synchronized (pendingFutures) {
            pendingFutures.add(new PendingDurable(id, future));
        }
        wakeFlusher.run();
        if (durableIndex >= id) {
            completePendingFutures(durableIndex);
        }
        return future;
    }

    /** Flusher thread: forces what the policy requires now and reports durability. True if it forced. */
    public boolean flush(long nowNanos) {
        switch (mode) {
            case ALWAYS -> {
                long target = writtenIndex;
                if (target > durableIndex) {
                    forceThrough(target);
                    durableIndex = target;
                    notifyDurable(target);
                    return true;
                } else if (!pendingFuturesEmpty()) {
                    completePendingFutures(durableIndex);
                }
            }
            case INTERVAL -> {
                if (nowNanos - nextIntervalSyncNanos >= 0) {
                    nextIntervalSyncNanos = nowNanos + syncIntervalNanos;
                    long target = writtenIndex;
                    if (target >= 0) {
                        forceThrough(target);
                    }
                }
                completePendingFutures(durableIndex);
            }
            case NEVER -> completePendingFutures(durableIndex);
            default -> throw new IllegalStateException("unknown durability " + mode);
        }
        return false;
    }

    /** Forces the segments holding everything up to {@code target}: any sealed since the last force, then the target's. */
    public void forceThrough(long target) {
        List<Integer> sealed;
        synchronized (sealedUnforced) {
            sealed = new ArrayList<>(sealedUnforced);
            sealedUnforced.clear();
        }
        try {
            syncer.force(sealed, SegmentRollCycle.INSTANCE.toCycle(target));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot force segments of queue '" + queueName + "' to disk", e);
        }
    }

    /**
     * The queue is closing: forces everything written (unless the policy is {@code never}), then
     * reports it durable and completes every pending future.
     */
    public void close() {
        long target = writtenIndex;
        if (target >= 0 && mode != DurabilityMode.NEVER) {
            try {
                forceThrough(target);
            } catch (UncheckedIOException e) {
                LOG.warn("Queue '{}': final force failed.", queueName, e);
            }
        }
        durableIndex = target;
        try {
            syncer.close();
        } catch (IOException e) {
            LOG.warn("Queue '{}': error while closing its segment channel.", queueName, e);
        }
    }

    /** After {@link #close()}: tells the listener and the pending futures, outside the queue's lock. */
    public void notifyClosed() {
        notifyDurable(durableIndex);
    }

    private void notifyDurable(long target) {
        LongConsumer l = listener;
        if (l != null) {
            try {
                l.accept(target);
            } catch (RuntimeException e) {
                LOG.error("Queue '{}': the durability listener failed.", queueName, e);
            }
        }
        completePendingFutures(target);
    }

    private boolean pendingFuturesEmpty() {
        synchronized (pendingFutures) {
            return pendingFutures.isEmpty();
        }
    }

    private void completePendingFutures(long durable) {
        List<PendingDurable> ready = new ArrayList<>();
        synchronized (pendingFutures) {
            while (!pendingFutures.isEmpty() && pendingFutures.peek().id <= durable) {
                ready.add(pendingFutures.poll());
            }
        }
        for (PendingDurable p : ready) {
            p.future.complete(p.id);
        }
    }

    /** Forces (fsyncs) of the segment being written since the queue was opened. */
    public long syncCount() {
        return syncer.syncs();
    }

    /** Total time spent in those forces, in nanoseconds. */
    public long syncNanos() {
        return syncer.syncNanos();
    }

    private record PendingDurable(long id, CompletableFuture<Long> future) implements Comparable<PendingDurable> {
        @Override
        public int compareTo(PendingDurable o) {
            return Long.compare(id, o.id);
        }
    }
}
