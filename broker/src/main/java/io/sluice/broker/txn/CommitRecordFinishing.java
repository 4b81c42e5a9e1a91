package io.sluice.broker.txn;

import io.sluice.broker.queue.BrokerQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * What becomes of a commit's record once its commit is applied, live or at recovery (docs/transactions.md, X3 and X5):
 * once the acknowledgements it applied are durable, the {@link CommitFinisher} finishes it when its staged messages are
 * acknowledged, in the transaction log or in the queue that keeps it (T5), and a record kept in a queue is settled.
 *
 * <p>Threads: the coordinator's thread; what it hands to queues comes back there ({@code executor}), at that
 * thread's next turn: nothing here is on a commit's path, so it wakes nobody.
 */
final class CommitRecordFinishing {
    private static final Logger LOG = LoggerFactory.getLogger(TransactionCoordinator.class); // the category operators know these lines by

    private final TransactionLog log;
    private final CommitFinisher finisher;
    private final QueueCommitRecords inQueues;
    /** The coordinator's thread: at its next turn, without a wake-up of its own (rule "finishing rides along"). */
    private final Executor executor;

    CommitRecordFinishing(TransactionLog log, CommitFinisher finisher, QueueCommitRecords inQueues, Executor executor) {
        this.log = log;
        this.finisher = finisher;
        this.inQueues = inQueues;
        this.executor = executor;
    }

    /**
     * Once the acknowledgements a commit applied in {@code sources} are durable, its record goes to the
     * {@link CommitFinisher}, which finishes it ({@code finishRecord}) once its staged messages are
     * acknowledged (X3). A record kept in a queue ({@code recordQueue}; null for the log) is then settled (X5).
     */
    void finishOnceDurable(Runnable finishRecord, BrokerQueue recordQueue, List<BrokerQueue> sources,
                                   List<CommitFinisher.Target> targets) {
        List<CompletableFuture<Void>> durable = new ArrayList<>();
        for (BrokerQueue q : sources) {
            durable.add(q.transactions().whenAcksDurable());
        }
        CompletableFuture.allOf(durable.toArray(CompletableFuture[]::new)).whenCompleteAsync((x, failed) -> {
            inQueues.settled(recordQueue); // a failed source queue's acknowledgements are applied again at the next start, if ever
            if (failed != null) {
                LOG.warn("A committed transaction's acknowledgements could not be made durable ({}); the next start applies "
                        + "them again.", failed.toString());
                return;
            }
            CrashPoint.reached(CrashPoint.BEFORE_FINISH);
            finisher.add(finishRecord, targets);
        }, executor);
    }

    /** Finishes commit records of the log: acknowledged there. */
    Runnable inLog(long[] records) {
        return () -> log.finished(records);
    }

    /** Finishes a commit record kept in {@code queue} (T5): acknowledged there. */
    Runnable inQueue(BrokerQueue queue, long id) {
        return () -> queue.transactions().finishCommitRecord(id).whenComplete((x, failed) -> {
            if (failed == null) {
                inQueues.finished();
            } else {
                LOG.warn("Queue '{}': a finished commit's record could not be acknowledged ({}); the next start applies it "
                        + "again, which changes nothing.", queue.name(), failed.toString());
            }
        });
    }
}
