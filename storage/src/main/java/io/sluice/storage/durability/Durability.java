package io.sluice.storage.durability;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.StorageFailedException;
import io.sluice.storage.StorageFilesExhaustedException;
import io.sluice.storage.segment.SegmentRollCycle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongConsumer;

/**
 * One queue's durability bookkeeping: the written and durable positions, the segments that must be
 * forced before the durable position may pass them, the futures waiting for a position, and the
 * policy of {@link DurabilityMode}.
 *
 * <p>Rule "a failed force is final": after a force fails, Linux has reported the writeback error once
 * and marked the pages clean, so a retry would succeed without the data being on disk (PostgreSQL's
 * "fsyncgate"). So the first failure is kept: the durable position never moves again, every waiting
 * and later future fails with it, and the queue refuses appends until a restart reads the files
 * back. A segment leaves the list of those to force only after a force that included it succeeded.
 *
 * <p>Rule "force what is awaited" (under {@link DurabilityMode#ALWAYS}): the flusher forces a queue when someone waits
 * for an id not durable yet ({@link #demand}, which {@link #whenDurable} calls too), not for every append. An append
 * no one waits for (a transaction's staged message, confirmed later by its commit; a follower's replicated copy)
 * becomes durable with the next force that someone waits for, when its segment is sealed, or at the latest
 * {@code syncIntervalMs} after the flusher first saw it unforced. So the group commit forces a transaction's staged messages once, with its commit
 * record, instead of once on their own and again with the record. Nothing a confirm depends on waits longer:
 * every confirm demands its id.
 *
 * <p>Threads: {@link #appended}, {@link #sealed} run on appending threads under the queue's lock;
 * {@link #flush} runs on the storage flusher only; {@link #whenDurable} and {@link #demand} on any thread. The
 * positions are volatile; the list of sealed segments and the pending futures have their own monitors, held
 * only to copy or change them, never across a force.
 */
public final class Durability {
    private static final Logger LOG = LoggerFactory.getLogger(Durability.class);

    private final String queueName;
    private final DurabilityMode mode;
    private final long syncIntervalNanos;
    private final SegmentSyncer syncer;
    private final Runnable wakeFlusher;
    /** Run by the flusher before every force of the segments (the segment log's dropping of written pages). */
    private final Runnable beforeForce;

    private volatile long writtenIndex;
    /**
     * The message bytes and staged records of the newest append's segment through it, for rule "the forced mark".
     * Written with {@link #writtenIndex} by the appending thread, under the queue's lock, between two steps of
     * {@link #writtenVersion} (odd while they change), so that the flusher reads the three as of one append without a
     * lock and without an allocation per append.
     */
    private long writtenSegmentMessageBytes = -1;
    private long writtenSegmentStaged;
    @SuppressWarnings("unused") // through WRITTEN_VERSION
    private volatile long writtenVersion;
    private static final VarHandle WRITTEN_VERSION;

    static {
        try {
            WRITTEN_VERSION = MethodHandles.lookup().findVarHandle(Durability.class, "writtenVersion", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Where a force's mark is kept, or null for none (rule "the forced mark"). */
    private final ForcedMark forcedMark;
    private volatile long durableIndex;
    /** The highest id someone waits to see durable (rule "force what is awaited"); only grows. */
    private final AtomicLong demandedIndex = new AtomicLong(-1);
    /** A segment was sealed since the flusher last started a force under {@code always}: it forces on its next turn. */
    private volatile boolean sealedSinceForce;
    /** Whether the flusher has seen appends beyond the durable index that no one waited for, and since when. Flusher only. */
    private boolean unawaitedSeen;
    private long unawaitedSinceNanos;
    private volatile LongConsumer listener;
    private volatile Consumer<StorageFailedException> failureListener;
    /** Segments sealed since the last successful force, which the next force must include. */
    private final List<Integer> sealedUnforced = new ArrayList<>();
    private final PriorityQueue<PendingDurable> pendingFutures = new PriorityQueue<>();
    /** The first failure of this queue's storage, or null; final until the queue is reopened. */
    private volatile StorageFailedException failure;
    /** When {@link DurabilityMode#INTERVAL} forces next; flusher thread only. */
    private long nextIntervalSyncNanos;
    /** Under {@link DurabilityMode#NEVER}: the syncer holds nothing for segments before this one; flusher thread only. */
    private int releasedBefore = -1;
    /** The hook before a force has failed once and was logged; written by whichever thread forces. */
    private volatile boolean beforeForceFailureLogged;
    /** A force is waiting for a file descriptor (logged once per episode); flusher thread only. */
    private boolean waitingForDescriptor;

    /**
     * Everything up to {@code recoveredIndex} was read back from disk, so it counts as durable. {@code beforeForce} runs
     * on the forcing thread before every force of the segments, holding none of this object's monitors (the flusher
     * holds no lock then; {@link #close()} runs under its caller's locks); what it throws is logged, not thrown on.
     */
    public Durability(String queueName, DurabilityMode mode, long syncIntervalMs, SegmentSyncer syncer, Runnable wakeFlusher,
                      Runnable beforeForce, long recoveredIndex) {
        this(queueName, mode, syncIntervalMs, syncer, wakeFlusher, beforeForce, new ForcedMark.Written(recoveredIndex, -1, 0), null);
    }

    /**
     * As above, {@code recovered} naming the last record read back with its segment's figures through it, and keeping
     * each successful force's mark in {@code forcedMark} (which {@link #close()} closes).
     */
    public Durability(String queueName, DurabilityMode mode, long syncIntervalMs, SegmentSyncer syncer, Runnable wakeFlusher,
                      Runnable beforeForce, ForcedMark.Written recovered, ForcedMark forcedMark) {
        long recoveredIndex = recovered.index();
        this.writtenSegmentMessageBytes = recovered.segmentMessageBytes();
        this.writtenSegmentStaged = recovered.segmentStaged();
        this.forcedMark = forcedMark;
        this.queueName = queueName;
        this.mode = mode;
        this.syncIntervalNanos = syncIntervalMs * 1_000_000L;
        this.syncer = syncer;
        this.wakeFlusher = wakeFlusher;
        this.beforeForce = beforeForce;
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

    /** An append of {@code index} was written into the mapping, its segment's figures not known; under the queue's lock. */
    public void appended(long index) {
        appended(index, -1, 0);
    }

    /**
     * An append of {@code index} was written into the mapping; its segment's records through it hold
     * {@code segmentMessageBytes} of messages (-1 if not known) and {@code segmentStaged} staged records. Under the
     * queue's lock: one writer at a time.
     */
    public void appended(long index, long segmentMessageBytes, long segmentStaged) {
        long version = (long) WRITTEN_VERSION.getOpaque(this);
        WRITTEN_VERSION.setOpaque(this, version + 1);
        VarHandle.storeStoreFence();
        writtenSegmentMessageBytes = segmentMessageBytes;
        writtenSegmentStaged = segmentStaged;
        writtenIndex = index;
        WRITTEN_VERSION.setRelease(this, version + 2);
        if (mode != DurabilityMode.ALWAYS) {
            durableIndex = index;
        }
    }

    /**
     * The newest append with its segment's figures, read as of one append (see {@link #writtenVersion}). An append
     * takes nanoseconds between its two steps; should the count ever stay odd (an append's thread stopped between them),
     * the newest index alone is returned after a bounded wait, with its figures unknown, which the mark allows.
     */
    private ForcedMark.Written written() {
        for (int attempt = 0; attempt < 100_000; attempt++) {
            long before = (long) WRITTEN_VERSION.getAcquire(this);
            long index = writtenIndex;
            long messageBytes = writtenSegmentMessageBytes;
            long staged = writtenSegmentStaged;
            VarHandle.loadLoadFence();
            if ((before & 1) == 0 && (long) WRITTEN_VERSION.getOpaque(this) == before) {
                return new ForcedMark.Written(index, messageBytes, staged);
            }
            Thread.onSpinWait();
        }
        return new ForcedMark.Written(writtenIndex, -1, 0);
    }

    /** After a force through {@code forced} succeeded and was reported: its mark, for recovery (rule "the forced mark"). */
    private void markForced(ForcedMark.Written forced) {
        if (forcedMark != null) {
            forcedMark.write(forced);
        }
    }

    /**
     * {@code segment} was sealed by a roll: the next force must include it. Under {@code always} that force comes on the
     * flusher's next turn even if no one waits (rule "force what is awaited" makes this exception): until a sealed
     * segment is forced its channel stays open and a reclaim pass cannot delete its file, so with only unawaited
     * appends (a follower's copies) acknowledged segments would stay on disk for a sync interval. Under the queue's lock.
     */
    public void sealed(int segment) {
        synchronized (sealedUnforced) {
            sealedUnforced.add(segment);
        }
        if (mode == DurabilityMode.ALWAYS) {
            sealedSinceForce = true;
            wakeFlusher.run();
        }
    }

    /** The callback told, on the flusher thread, each time the durable index advances. */
    public void listener(LongConsumer listener) {
        this.listener = listener;
    }

    /** The callback told, on the failing thread, each time the queue's storage is failed (first failure and later ones). */
    public void failureListener(Consumer<StorageFailedException> listener) {
        this.failureListener = listener;
    }

    /**
     * A future completed (with the id) once {@code id} is durable, or failed with a
     * {@link StorageFailedException} if the queue's storage failed first.
     */
    public CompletableFuture<Long> whenDurable(long id) {
        if (durableIndex >= id) {
            return CompletableFuture.completedFuture(id);
        }
        StorageFailedException failed = failure;
        if (failed != null) {
            return CompletableFuture.failedFuture(failed);
        }
        CompletableFuture<Long> future = new CompletableFuture<>();
        synchronized (pendingFutures) {
            pendingFutures.add(new PendingDurable(id, future));
        }
        demand(id);
        if (durableIndex >= id) {
            completePendingFutures(durableIndex);
        } else if (failure != null) {
            failPendingFutures();
        }
        return future;
    }

    /**
     * Someone waits for {@code id} to be durable (a confirm, a commit, a copy's move): under {@code always} the flusher
     * forces through it on its next turn, and is woken for it (rule "force what is awaited"). Cheap when {@code id} is
     * durable already or demanded already. Any thread.
     */
    public void demand(long id) {
        if (mode != DurabilityMode.ALWAYS || id <= durableIndex) {
            return;
        }
        long demanded = demandedIndex.get();
        while (id > demanded) {
            if (demandedIndex.compareAndSet(demanded, id)) {
                wakeFlusher.run();
                return;
            }
            demanded = demandedIndex.get();
        }
    }

    /** Why the queue's storage failed, or null. */
    public StorageFailedException failure() {
        return failure;
    }

    /**
     * Marks the queue's storage failed (rule "a failed force is final"): the first call wins and is
     * logged; every waiting future fails, and the listener is told so that it can refuse what it waits
     * for. Any thread.
     */
    public StorageFailedException fail(String what, Throwable cause) {
        StorageFailedException failed;
        synchronized (pendingFutures) {
            if (failure == null) {
                failure = new StorageFailedException("queue '" + queueName + "': " + what + " failed (" + describe(cause)
                        + "); nothing written since the last successful force is confirmed, and the queue refuses appends "
                        + "until the broker is restarted", cause);
                LOG.error("Queue '{}': {} failed; the queue refuses appends and confirms nothing more until the broker is "
                        + "restarted (check the disk and the kernel log first).", queueName, what, cause);
            }
            failed = failure;
        }
        failPendingFutures();
        Consumer<StorageFailedException> onFailure = failureListener;
        if (onFailure != null) {
            onFailure.accept(failed);
        }
        tellListener(durableIndex);
        return failed;
    }

    private static String describe(Throwable cause) {
        String message = cause.getMessage();
        return message == null ? cause.getClass().getSimpleName() : message;
    }

    /** Flusher thread: forces what the policy requires now and reports durability. True if it forced. */
    public boolean flush(long nowNanos) {
        if (failure != null) {
            return false;
        }
        try {
            boolean forced = flushByMode(nowNanos);
            if (waitingForDescriptor) {
                waitingForDescriptor = false;
                LOG.info("Queue '{}': its segments are forced again.", queueName);
            }
            return forced;
        } catch (StorageFilesExhaustedException e) {
            // Nothing failed to reach the disk: a file could not be opened. The same force is tried again on the
            // flusher's next turn; the durable index stays where it is meanwhile.
            if (!waitingForDescriptor) {
                waitingForDescriptor = true;
                LOG.warn("Queue '{}': its segments cannot be forced until a file descriptor is free; confirms wait. {}",
                        queueName, e.getMessage());
            }
            return false;
        }
    }

    private boolean flushByMode(long nowNanos) {
        switch (mode) {
            case ALWAYS -> {
                ForcedMark.Written written = written();
                long target = written.index();
                if (target > durableIndex && (demandedIndex.get() > durableIndex || sealedSinceForce || unawaitedDue(nowNanos))) {
                    sealedSinceForce = false; // before the force copies the list of sealed segments: a later seal sets it again
                    forceThrough(target);
                    unawaitedSeen = false;
                    durableIndex = target;
                    notifyDurable(target);
                    markForced(written);
                    return true;
                } else if (!pendingFuturesEmpty()) {
                    completePendingFutures(durableIndex);
                }
            }
            case INTERVAL -> {
                if (nowNanos - nextIntervalSyncNanos >= 0) {
                    nextIntervalSyncNanos = nowNanos + syncIntervalNanos;
                    ForcedMark.Written written = written();
                    if (written.index() >= 0) {
                        forceThrough(written.index());
                        markForced(written);
                    }
                }
                completePendingFutures(durableIndex);
            }
            case NEVER -> {
                long written = writtenIndex;
                if (written >= 0) { // -1 (nothing appended yet) is no segment's id: nothing to release
                    releaseBefore(SegmentRollCycle.INSTANCE.toCycle(written));
                }
                completePendingFutures(durableIndex);
            }
            default -> throw new IllegalStateException("unknown durability " + mode);
        }
        return false;
    }

    /**
     * Rule "force what is awaited": appends no one waits for are forced anyway once they have waited a sync interval,
     * so that they too reach the disk in bounded time, as under {@code interval}.
     */
    private boolean unawaitedDue(long nowNanos) {
        if (!unawaitedSeen) {
            unawaitedSeen = true;
            unawaitedSinceNanos = nowNanos;
            return false;
        }
        return nowNanos - unawaitedSinceNanos >= syncIntervalNanos;
    }

    /**
     * Under {@code never}, once appends have moved past a segment: nothing will force it (only reclaim's
     * rule R4 forces, within its pass, which is not running: it runs on this thread too), so what was
     * opened or kept for its forces is closed now rather than by a force that does not come, and it leaves
     * the list of segments to force.
     */
    private void releaseBefore(int writtenSegment) {
        if (writtenSegment <= releasedBefore) {
            return;
        }
        releasedBefore = writtenSegment;
        synchronized (sealedUnforced) {
            sealedUnforced.removeIf(s -> s < writtenSegment);
        }
        try {
            syncer.releaseBefore(writtenSegment);
        } catch (IOException e) {
            LOG.warn("Queue '{}': error while closing the channels of sealed segments.", queueName, e);
        }
    }

    /**
     * Forces the segments holding everything up to {@code target}: any sealed since the last force,
     * then the target's.
     *
     * @throws StorageFailedException if the force failed (and the queue is now failed)
     * @throws StorageFilesExhaustedException if a file could not be opened for want of descriptors; the queue
     *         is not failed, and the same force can be tried again
     */
    public void forceThrough(long target) {
        force(-1, -1, SegmentRollCycle.INSTANCE.toCycle(target));
    }

    /**
     * Rule R4 (docs/storage.md, "Reclaim"): forces every segment holding an id from {@code fromId} to
     * {@code throughId}, a relocation's copies, with any sealed since the last force and the segment the
     * newest append is in. The copies' segments are named, not found in the list of sealed ones: a retry
     * of a refused force comes turns later, when under {@code never} that list has dropped them.
     *
     * @throws StorageFailedException as {@link #forceThrough}
     * @throws StorageFilesExhaustedException as {@link #forceThrough}
     */
    public void forceRange(long fromId, long throughId) {
        int through = SegmentRollCycle.INSTANCE.toCycle(throughId);
        // Ending at the newest segment keeps the syncer's channel there, rather than moving it back to the copies'.
        force(SegmentRollCycle.INSTANCE.toCycle(fromId), through, Math.max(through, SegmentRollCycle.INSTANCE.toCycle(writtenIndex)));
    }

    /** Forces the sealed segments, those from {@code from} to {@code through} (none if -1), then {@code target}. */
    private void force(int from, int through, int target) {
        runBeforeForce();
        List<Integer> sealed;
        synchronized (sealedUnforced) {
            sealed = new ArrayList<>(sealedUnforced);
        }
        for (int s = Math.max(0, from); from >= 0 && s <= through; s++) {
            if (s != target && !sealed.contains(s)) {
                sealed.add(s);
            }
        }
        sealed.sort(null);
        try {
            syncer.force(sealed, target);
        } catch (StorageFilesExhaustedException e) {
            throw e;
        } catch (IOException | RuntimeException e) {
            throw fail("forcing its segments to disk", e);
        }
        synchronized (sealedUnforced) {
            sealedUnforced.removeAll(sealed);
        }
    }

    /**
     * Runs the hook before a force. What it does (dropping written pages) only saves the force work, so its failure
     * fails neither the force nor the queue: it is logged, once per queue, and the force goes on.
     */
    private void runBeforeForce() {
        try {
            beforeForce.run();
        } catch (RuntimeException e) {
            if (!beforeForceFailureLogged) {
                beforeForceFailureLogged = true;
                LOG.warn("Queue '{}': the step before its forces failed; the forces go on without it.", queueName, e);
            }
        }
    }

    /**
     * The queue is closing: forces everything written (unless the policy is {@code never}), then
     * reports it durable and completes every pending future.
     */
    public void close() {
        ForcedMark.Written written = written();
        long target = written.index();
        if (failure == null) {
            if (target >= 0 && mode != DurabilityMode.NEVER) {
                try {
                    forceThrough(target);
                    durableIndex = target;
                    markForced(written);
                } catch (StorageFailedException e) {
                    // fail() logged it; the waiting futures fail in notifyClosed()
                } catch (StorageFilesExhaustedException e) {
                    fail("the last force before closing", e); // nothing unforced may be reported durable
                }
            } else {
                durableIndex = target;
            }
        }
        if (forcedMark != null) {
            forcedMark.close();
        }
        try {
            syncer.close();
        } catch (IOException e) {
            LOG.warn("Queue '{}': error while closing its segment channel.", queueName, e);
        }
    }

    /**
     * After {@link #close()}: tells the listener and the pending futures, outside the queue's lock.
     * A future for an id the close could not make durable fails.
     */
    public void notifyClosed() {
        notifyDurable(durableIndex);
        if (failure != null) {
            failPendingFutures();
        } else if (!pendingFuturesEmpty()) {
            fail("closing", new IllegalStateException("the queue closed before these messages were durable"));
        }
    }

    private void notifyDurable(long target) {
        tellListener(target);
        completePendingFutures(target);
    }

    private void tellListener(long target) {
        LongConsumer l = listener;
        if (l != null) {
            try {
                l.accept(target);
            } catch (RuntimeException e) {
                LOG.error("Queue '{}': the durability listener failed.", queueName, e);
            }
        }
    }

    private void failPendingFutures() {
        List<PendingDurable> failed;
        synchronized (pendingFutures) {
            failed = new ArrayList<>(pendingFutures);
            pendingFutures.clear();
        }
        for (PendingDurable p : failed) {
            p.future.completeExceptionally(failure);
        }
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
