package io.sluice.storage.durability;

import io.sluice.storage.StorageException;
import io.sluice.storage.StorageFailedException;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;

/**
 * The forces of one queue's ack journal, and the futures waiting for them. The journal is forced once
 * per sync interval in every durability mode, by reclaim before a relocated source goes (rule R4), and
 * early whenever a future waits ({@link #whenForcedPast}): group commit for acknowledgements, one msync
 * for every waiter that asked before it began, instead of a wait of up to a whole interval.
 *
 * <p>A point in the journal is a count of its records ({@code AckLog.journalRecords()}): a change is
 * durable once a force returns a count at least the one read after the change was made. A change that a
 * rotation folded into a checkpoint added no record, and needs no force: the checkpoint is fsynced.
 *
 * <p>Threads: {@link #whenForcedPast} on any thread; {@link #flush} and {@link #force} on the storage
 * flusher (its own turn, or a reclaim pass); {@link #close} and {@link #closed} by the queue's close.
 * The pending futures are guarded by their monitor, held only to change them, never across a force,
 * and completed outside it.
 */
public final class AckJournalForces {
    /** What a flusher turn did. */
    public enum Turn {
        /** Nothing was due. */
        NONE,
        /** A future waited: the journal was forced early. */
        REQUESTED,
        /** The sync interval was due: the journal was forced (and the interval's other work is due too). */
        PERIODIC
    }

    private final String queueName;
    private final Path journalFile;
    private final FileForcer forcer;
    private final LongSupplier forceJournal;
    private final Durability durability;
    private final long syncIntervalNanos;
    private final Runnable wakeFlusher;

    private final PriorityQueue<Pending> pending = new PriorityQueue<>();
    /** True while {@link #pending} holds a future that asked for an early force: the flusher's unlocked look. */
    private volatile boolean waiting;
    /** Futures in {@link #pending} that asked for an early force; guarded by {@link #pending}. */
    private int early;
    private volatile boolean closed;
    /** The record count the last successful force covered; guarded by {@link #pending}. */
    private long forcedThrough;
    /** Why no future can complete any more (the queue closed or failed), or null; guarded by {@link #pending}. */
    private RuntimeException refusal;
    /** When the next periodic force is due; flusher thread only. */
    private long nextPeriodicForceNanos;

    /**
     * {@code forceJournal} forces the journal and returns the record count it covered; {@code forcer}
     * is told first ({@link FileForcer#forcingMapped}); a failure fails the queue through {@code durability}.
     */
    public AckJournalForces(String queueName, Path journalFile, FileForcer forcer, LongSupplier forceJournal,
                            Durability durability, long syncIntervalMs, Runnable wakeFlusher) {
        this.queueName = queueName;
        this.journalFile = journalFile;
        this.forcer = forcer;
        this.forceJournal = forceJournal;
        this.durability = durability;
        this.syncIntervalNanos = syncIntervalMs * 1_000_000L;
        this.wakeFlusher = wakeFlusher;
        durability.failureListener(this::refuse);
    }

    /**
     * A future completed once a force of the journal has covered {@code records} records, or failed if the
     * queue's storage fails or the queue closes first. Asks the flusher for an early force.
     */
    public CompletableFuture<Void> whenForcedPast(long records) {
        return whenForcedPast(records, true);
    }

    /**
     * As {@link #whenForcedPast(long)}; with {@code asksEarly} false it asks for no force of its own and
     * completes at the next force, periodic (at most the sync interval away) or asked for by another.
     */
    public CompletableFuture<Void> whenForcedPast(long records, boolean asksEarly) {
        CompletableFuture<Void> future = new CompletableFuture<>();
        synchronized (pending) {
            if (refusal != null) {
                return CompletableFuture.failedFuture(refusal);
            }
            if (forcedThrough >= records) {
                return CompletableFuture.completedFuture(null);
            }
            pending.add(new Pending(records, asksEarly, future));
            if (asksEarly) {
                early++;
                waiting = true;
            }
        }
        StorageFailedException failed = durability.failure();
        if (failed != null) {
            refuse(failed); // failed before this future was registered: the failure's own call missed it
        } else if (asksEarly) {
            wakeFlusher.run();
        }
        return future;
    }

    /** Flusher thread: forces the journal if the sync interval is due or a future waits. */
    public Turn flush(long nowNanos) {
        if (closed) {
            return Turn.NONE;
        }
        if (nowNanos - nextPeriodicForceNanos >= 0) {
            nextPeriodicForceNanos = nowNanos + syncIntervalNanos;
            force();
            return Turn.PERIODIC;
        }
        if (waiting) {
            force();
            return Turn.REQUESTED;
        }
        return Turn.NONE;
    }

    /**
     * Forces the journal (msync) without the queue's lock and completes the futures it covers. A failure
     * fails the queue (rule "a failed force is final") and every waiting future.
     *
     * @throws StorageFailedException if the force failed
     */
    public void force() {
        if (closed) {
            return;
        }
        long covered;
        try {
            forcer.forcingMapped(journalFile);
            covered = forceJournal.getAsLong();
        } catch (RuntimeException e) {
            throw durability.fail("forcing its ack journal to disk", e);
        }
        List<Pending> ready = new ArrayList<>();
        synchronized (pending) {
            forcedThrough = Math.max(forcedThrough, covered);
            while (!pending.isEmpty() && pending.peek().records <= forcedThrough) {
                Pending p = pending.poll();
                early -= p.asksEarly ? 1 : 0;
                ready.add(p);
            }
            waiting = early > 0;
        }
        for (Pending p : ready) {
            p.future.complete(null);
        }
    }

    /** The queue is closing, under its lock: no more forces (its close checkpoints instead). */
    public void close() {
        closed = true;
    }

    /**
     * After the queue closed, outside its lock: the futures still waiting complete if the close's checkpoint
     * made everything durable ({@code checkpointed}) and the queue had not failed, else fail; every later
     * one fails.
     */
    public void closed(boolean checkpointed) {
        List<Pending> left;
        RuntimeException failure;
        synchronized (pending) {
            failure = refusal; // set before the close only by a failure of the queue's storage
            if (refusal == null) {
                refusal = new StorageException("queue '" + queueName + "' is closed");
            }
            left = drain();
        }
        for (Pending p : left) {
            if (failure == null && checkpointed) {
                p.future.complete(null);
            } else {
                p.future.completeExceptionally(failure != null ? failure
                        : new StorageException("queue '" + queueName + "' closed before its acknowledgements were durable"));
            }
        }
    }

    /** The queue's storage failed: every waiting and later future fails with {@code failure}. */
    private void refuse(StorageFailedException failure) {
        List<Pending> left;
        synchronized (pending) {
            if (refusal == null) {
                refusal = failure;
            }
            left = drain();
        }
        for (Pending p : left) {
            p.future.completeExceptionally(failure);
        }
    }

    private List<Pending> drain() {
        List<Pending> left = new ArrayList<>(pending);
        pending.clear();
        early = 0;
        waiting = false;
        return left;
    }

    private record Pending(long records, boolean asksEarly, CompletableFuture<Void> future) implements Comparable<Pending> {
        @Override
        public int compareTo(Pending o) {
            return Long.compare(records, o.records);
        }
    }
}
