package io.sluice.broker.txn;

import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.broker.queue.BrokerQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * The commit records that must stay (rule X3 of {@link TransactionCoordinator}), in the transaction log
 * or in the one target queue of their transaction (T5), and their finish once nothing depends on them.
 * A commit record is what makes its staged messages visible across a restart: recovery discards a
 * staged record whose transaction has no commit record. So a record is finished only once every
 * message it staged has been acknowledged in its queue (consumed, purged, dead-lettered, or its queue's
 * files deleted: closed for a delete is not enough, T6 of QueueTransactions), and those acknowledgements are durable.
 *
 * <p>Checked by a sweep every {@value #SWEEP_MS} ms rather than on each acknowledgement, so the
 * queues' acknowledgement path does no work for it. A queue's part is done at once when the queue's
 * oldest unacknowledged message is newer than the part's newest staged one (the usual case, with
 * consumers keeping up); else its ids are looked at one by one, from where the last sweep stopped,
 * so a sweep costs one look per commit still waiting. (A commit record kept in a queue is itself an
 * unacknowledged message there, older than the commits after it: those take the look by id.)
 *
 * <p>Threads: the coordinator's thread only.
 */
final class CommitFinisher {
    private static final Logger LOG = LoggerFactory.getLogger(CommitFinisher.class);
    static final long SWEEP_MS = 100;

    /** The messages a commit staged in one queue. */
    record Target(BrokerQueue queue, long[] ids, long newest) {
    }

    /** One commit's record, waiting for the staged messages of its target queues to be acknowledged. */
    private static final class Waiting {
        final Runnable finishRecord;
        final List<Target> targets;
        /** Targets before this index are done. */
        int done;
        /** In the target at {@link #done}, the ids before this index are acknowledged. */
        int acknowledged;

        Waiting(Runnable finishRecord, List<Target> targets) {
            this.finishRecord = finishRecord;
            this.targets = targets;
        }
    }

    private final EventExecutor executor;
    /** Where what follows a durable acknowledgement runs: the coordinator's thread, at its next turn (no wake-up of its own). */
    private final Executor later;
    /** Run at the start of every sweep: the coordinator's deferred work, which the sweep bounds in time. */
    private final Runnable beforeSweep;
    private final List<Waiting> waiting = new ArrayList<>();
    private ScheduledFuture<?> sweep;

    CommitFinisher(EventExecutor executor, Executor later, Runnable beforeSweep) {
        this.executor = executor;
        this.later = later;
        this.beforeSweep = beforeSweep;
    }

    void start() {
        sweep = executor.scheduleWithFixedDelay(this::sweep, SWEEP_MS, SWEEP_MS, TimeUnit.MILLISECONDS);
    }

    /**
     * The record of a commit whose acknowledgements are durable, finished by {@code finishRecord} (an
     * acknowledgement in the log, or in the target queue that holds it) once the messages it staged in
     * {@code targets} are acknowledged.
     */
    void add(Runnable finishRecord, List<Target> targets) {
        if (targets.isEmpty()) {
            finishRecord.run();
        } else {
            waiting.add(new Waiting(finishRecord, targets));
        }
    }

    private void sweep() {
        beforeSweep.run();
        if (waiting.isEmpty()) {
            return;
        }
        Map<BrokerQueue, Long> acknowledgedBelow = new IdentityHashMap<>(); // one look at each queue per sweep
        waiting.removeIf(w -> {
            while (w.done < w.targets.size()) {
                Target t = w.targets.get(w.done);
                long below = acknowledgedBelow.computeIfAbsent(t.queue(), q -> q.transactions().acknowledgedBelow());
                if (t.newest() >= below) {
                    while (w.acknowledged < t.ids().length && t.queue().transactions().isAcknowledged(t.ids()[w.acknowledged])) {
                        w.acknowledged++;
                    }
                    if (w.acknowledged < t.ids().length) {
                        return false;
                    }
                }
                w.done++;
                w.acknowledged = 0;
            }
            finish(w);
            return true;
        });
    }

    private void finish(Waiting w) {
        List<CompletableFuture<Void>> durable = new ArrayList<>();
        for (Target t : w.targets) {
            durable.add(t.queue().transactions().whenAcksDurable()); // a deleted queue's complete once its files are gone
        }
        CompletableFuture.allOf(durable.toArray(CompletableFuture[]::new)).whenCompleteAsync((x, failed) -> {
            if (failed != null) { // a queue's storage failed: what it acknowledged may come back, and needs the record then
                LOG.warn("A commit's published messages are consumed, but their acknowledgements could not be made durable "
                        + "({}); its record stays until the next start.", failed.toString());
                return;
            }
            try {
                w.finishRecord.run();
            } catch (RuntimeException e) {
                LOG.warn("A finished commit's record could not be acknowledged ({}); the next start applies it again, "
                        + "which changes nothing.", e.toString());
            }
        }, later);
    }

    /** Commits waiting for their staged messages to be acknowledged. */
    int waiting() {
        return waiting.size();
    }

    void close() {
        if (sweep != null) {
            sweep.cancel(false);
        }
    }
}
