package io.sluice.broker.queue;

import io.sluice.storage.StorageFullException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.atomic.AtomicReference;

/**
 * Whether this cluster node still applies the replicated log (rule R2 of docs/replication.md, "A node that cannot apply a
 * committed entry stops"). Every node must apply every committed entry: one that its store refuses here (the disk below
 * {@code storage.reserved-disk-bytes}, an I/O error, a failed force) must not be skipped, or this node holds less than the
 * others from then on (and loses those messages for good if it leads). The node stops applying instead, as it does at
 * an entry it cannot read (rule R12): the first failure is recorded here, and from then on nothing more is applied
 * anywhere (the queues' apply work checks {@link #halted} first), no snapshot marker is written past what was applied
 * (the state machine refuses them), and the node stops taking part in the shard ({@link Listener}). Started again, it
 * applies the log again from its last marker, which replaying makes exact (rule R4).
 *
 * <p>A failure whose outcome is the same on every node (a queue deleted by an earlier entry) is no reason to stop.
 *
 * <p>Threads: any; the first {@link #stop} wins, once.
 */
public final class ApplyHalt {
    private static final Logger LOG = LoggerFactory.getLogger(ApplyHalt.class);
    /** What the reason ends with: why not skip, and what to do. */
    static final String ADVICE = "; this node stops applying the log rather than skip the entry and hold less than the other nodes: "
            + "give its store room or repair its disk, then start it again, and it applies the log again from its last snapshot marker";

    /** Told once, when the node stops applying the log. */
    public interface Listener {
        /**
         * {@code raftStopsItself}: the stop is thrown out of the state machine's apply on Ratis's updater thread, which then
         * closes the shard on this node itself; otherwise (a queue's thread found it) the listener must.
         */
        void stopped(String reason, boolean raftStopsItself);
    }

    /**
     * The codes a stop is reported under ({@code haltedCode} of {@code GET /api/cluster}), one per kind of cause, so that an
     * operator's tooling need not parse the sentence.
     */
    public static final String STORE_FAILED = "store_failed";
    /** The log holds an entry of a level this node's broker does not support (rule R12). */
    public static final String ENTRY_TOO_NEW = "entry_too_new";
    /** A message of a committed entry is larger than this node's store can hold at all (rule R2). */
    public static final String ENTRY_NOT_STORABLE = "entry_not_storable";
    /** The cluster's settings that every node must share differ from this node's (rule R2). */
    public static final String SETTINGS_MISMATCH = "settings_mismatch";

    /** Why, and under which code, this node stopped; null while it applies the log. */
    private record Stop(String code, String reason) {
    }

    private final AtomicReference<Stop> stop = new AtomicReference<>();
    private volatile Listener listener = (why, raftStopsItself) -> { };

    /** Set once, by the cluster node, before the shard starts. */
    public void listener(Listener listener) {
        this.listener = listener;
    }

    /** Why this node stopped applying the log, or null while it applies it. */
    public String reason() {
        Stop stopped = stop.get();
        return stopped == null ? null : stopped.reason();
    }

    /** The code of the stop ({@link #STORE_FAILED} and the others), or null while this node applies the log. */
    public String code() {
        Stop stopped = stop.get();
        return stopped == null ? null : stopped.code();
    }

    public boolean halted() {
        return stop.get() != null;
    }

    /**
     * {@code what} (a sentence naming the entry or the queue and the step) failed on this node with {@code cause}: the
     * node stops applying the log ({@link #STORE_FAILED}).
     */
    public void failed(String what, Throwable cause) {
        stop(STORE_FAILED, reason(what, cause), false);
    }

    /** The sentence a node that stopped says: {@code what} failed here, why, and what to do. */
    public static String reason(String what, Throwable cause) {
        return what + " failed on this node: " + describe(cause) + ADVICE;
    }

    /**
     * The state machine, on Ratis's updater thread, is about to throw {@code why} (reported under {@code code}) out of its
     * apply: true if this stops the node (the throw then stops Ratis's updater, which closes the shard), false if it had
     * stopped already (the shard is being closed by the listener: the updater must not throw, or it would never reach the
     * index the close waits for).
     */
    public boolean stopInApply(String code, String why) {
        return stop(code, why, true);
    }

    private boolean stop(String code, String why, boolean raftStopsItself) {
        if (!stop.compareAndSet(null, new Stop(code, why))) {
            LOG.error("Also, after this node stopped applying the log: {}.", why);
            return false;
        }
        LOG.error("This node stops applying the replicated log ({}): {}.", code, why);
        listener.stopped(why, raftStopsItself);
        return true;
    }

    /**
     * {@code task}, a queue's apply work for a committed entry, run on its executor: not run once the node stopped (it is
     * applied again after the restart, from the log), and a failure of it stops the node, unless {@code queue} was deleted
     * meanwhile (every node deletes it alike; only a broker stopping closes a queue under queued work otherwise).
     */
    Runnable guard(BrokerQueue queue, String what, Runnable task) {
        return () -> {
            if (halted()) {
                return;
            }
            try {
                task.run();
            } catch (RuntimeException | Error e) {
                if (queue.isClosed()) {
                    LOG.warn("Queue '{}' was closed under {}: {}", queue.name(), what, e.toString());
                    return;
                }
                failed(what + " on queue '" + queue.name() + "'", e);
            }
        };
    }

    /** The cause in a sentence: a full disk names the key that decides it. */
    static String describe(Throwable failure) {
        Throwable cause = io.sluice.broker.error.ErrorCodes.unwrap(failure);
        if (cause instanceof StorageFullException) {
            return "its free disk space is below storage.reserved-disk-bytes (" + cause.getMessage() + ")";
        }
        String message = cause.getMessage();
        return message == null ? cause.toString() : cause.getClass().getSimpleName() + ": " + message;
    }
}
