package io.sluice.broker.txn;

import io.netty.util.concurrent.EventExecutor;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueManager;
import io.sluice.broker.queue.QueueTransactions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongPredicate;
import java.util.stream.LongStream;

/**
 * Rule X4 of docs/transactions.md at the broker's start: the transactions the log and the queues' commit records
 * (T5) left interrupted are rolled back or finished before any client is served. It raises {@code nextNumber} past
 * every transaction number found: in the log, in commit records, and in staged messages committed or not.
 *
 * <p>Threads: the coordinator's thread ({@code executor}), once, before the coordinator takes any work.
 */
final class TransactionRecovery {
    private static final Logger LOG = LoggerFactory.getLogger(TransactionCoordinator.class); // the category operators know these lines by

    private final TransactionLog log;
    private final QueueManager queues;
    private final QueueCommitRecords inQueues;
    private final CommitRecordFinishing records;
    private final AtomicLong nextNumber;
    private final EventExecutor executor;

    TransactionRecovery(TransactionLog log, QueueManager queues, QueueCommitRecords inQueues, CommitRecordFinishing records,
                        AtomicLong nextNumber, EventExecutor executor) {
        this.log = log;
        this.queues = queues;
        this.inQueues = inQueues;
        this.records = records;
        this.nextNumber = nextNumber;
        this.executor = executor;
    }

    /**
     * X4: the staged records of every transaction without a commit record are discarded, in every
     * queue at once; each commit found has its acknowledgements applied again (an acknowledged message
     * stays so), and then waits to be finished as a live one does.
     */
    CompletableFuture<Void> recover() {
        List<TransactionLog.Interrupted> interrupted = log.interrupted();
        Set<Long> committed = new HashSet<>();
        StagedNamed named = new StagedNamed();
        long numbers = nextNumber.get();
        int rolledBack = 0;
        for (TransactionLog.Interrupted t : interrupted) {
            numbers = Math.max(numbers, t.number() + 1);
            if (t.commit() != null) {
                committed.add(t.number());
                named.add(t.commit(), queues);
            } else {
                log.finished(t.records().stream().mapToLong(Long::longValue).toArray());
                rolledBack++;
            }
        }
        // T5: the commit records kept in their transaction's one target queue. Asked of every queue at once,
        // then read: one round trip to the queues' executors, not one per queue.
        List<BrokerQueue> all = new ArrayList<>(queues.all());
        List<CompletableFuture<List<QueueTransactions.FoundCommitRecord>>> asked = new ArrayList<>();
        List<CompletableFuture<Long>> highestStaged = new ArrayList<>();
        for (BrokerQueue q : all) {
            asked.add(q.transactions().commitRecordsFound());
            highestStaged.add(q.transactions().highestTransactionFound());
        }
        List<CompletableFuture<Void>> redone = new ArrayList<>();
        List<Runnable> redoInQueues = new ArrayList<>();
        for (int i = 0; i < all.size(); i++) {
            BrokerQueue q = all.get(i);
            for (QueueTransactions.FoundCommitRecord found : asked.get(i).join()) {
                CommitRecord commit;
                try {
                    commit = CommitRecord.decode(found.payload());
                } catch (IllegalArgumentException e) {
                    LOG.error("Transaction {}: its commit record {} in queue '{}' is damaged ({}); the transaction is taken as "
                            + "rolled back.", found.transaction(), found.id(), q.name(), e.getMessage());
                    continue;
                }
                committed.add(found.transaction());
                named.add(commit, queues);
                inQueues.written(q);
                redoInQueues.add(() -> redone.add(redoAcknowledgements(commit, records.inQueue(q, found.id()), q)));
            }
        }
        // Rule "numbered above what is stored": an uncommitted transaction's staged messages carry its number too, and
        // stay on disk until their discard below is durable. The clock the first number comes from may have been set
        // back since they were written, so it alone does not keep a new transaction off their number.
        for (CompletableFuture<Long> highest : highestStaged) {
            numbers = Math.max(numbers, highest.join() + 1);
        }
        nextNumber.set(numbers);
        List<CompletableFuture<Long>> discards = new ArrayList<>();
        for (BrokerQueue q : all) {
            discards.add(q.transactions().recoverStaged(committed::contains, named.in(q)));
        }
        long discarded = 0;
        for (CompletableFuture<Long> f : discards) {
            discarded += f.join();
        }
        for (TransactionLog.Interrupted t : interrupted) {
            if (t.commit() != null) {
                redone.add(redoAcknowledgements(t.commit(), records.inLog(t.records().stream().mapToLong(Long::longValue).toArray()),
                        null));
            }
        }
        redoInQueues.forEach(Runnable::run);
        if (!interrupted.isEmpty() || !redone.isEmpty() || discarded > 0) {
            LOG.info("Transactions: {} committed transactions whose published messages may not all be consumed yet ({} of "
                    + "them with their commit record in their target queue), their acknowledgements applied again; {} staged "
                    + "messages of transactions that never committed discarded ({} log records rolled back).", redone.size(),
                    redoInQueues.size(), discarded, rolledBack);
        }
        return CompletableFuture.allOf(redone.toArray(CompletableFuture[]::new));
    }

    /**
     * The ids each committed transaction's record names as staged in each queue (its targets' parts, each only in the
     * incarnation it was written for, X6): what recovery makes visible there, rather than every staged record that
     * carries a committed transaction's number (rule "named, not numbered" of {@link QueueTransactions#recoverStaged}).
     */
    private static final class StagedNamed {
        private final Map<BrokerQueue, List<long[]>> byQueue = new IdentityHashMap<>();

        void add(CommitRecord commit, QueueManager queues) {
            for (CommitRecord.Part target : commit.targets()) {
                BrokerQueue q = queues.get(target.queue());
                if (q != null && target.appliesTo(q)) {
                    byQueue.computeIfAbsent(q, x -> new ArrayList<>()).add(target.ids());
                }
            }
        }

        LongPredicate in(BrokerQueue q) {
            List<long[]> parts = byQueue.get(q);
            if (parts == null) {
                return id -> false;
            }
            long[] sorted = parts.stream().flatMapToLong(LongStream::of).sorted().toArray();
            return id -> Arrays.binarySearch(sorted, id) >= 0;
        }
    }

    /**
     * Recovery: {@code commit}'s acknowledgements applied again; its record (in {@code recordQueue}, or the
     * log if null) then waits to be finished.
     */
    private CompletableFuture<Void> redoAcknowledgements(CommitRecord commit, Runnable finishRecord, BrokerQueue recordQueue) {
        List<CompletableFuture<?>> acked = new ArrayList<>();
        List<BrokerQueue> sources = new ArrayList<>();
        for (CommitRecord.Part source : commit.sources()) {
            BrokerQueue q = queues.get(source.queue());
            // X6: a queue deleted since, even one declared again under its name, took its acknowledgements along; the
            // new one numbers its messages from the start, and must not lose its own to this record
            if (q != null && source.appliesTo(q)) {
                acked.add(q.transactions().ackRecovered(source.ids()));
                sources.add(q);
            }
        }
        List<CommitFinisher.Target> targets = new ArrayList<>();
        for (CommitRecord.Part target : commit.targets()) {
            BrokerQueue q = queues.get(target.queue());
            if (q != null && target.appliesTo(q)) { // else its staged messages went with the deleted queue (X6)
                targets.add(new CommitFinisher.Target(q, target.ids(), target.highestId()));
            }
        }
        return CompletableFuture.allOf(acked.toArray(CompletableFuture[]::new)).handleAsync((x, failed) -> {
            CrashPoint.reached(CrashPoint.RECOVERY_BEFORE_FINISH);
            if (failed != null) {
                LOG.warn("A committed transaction's acknowledgements could not be applied again ({}); the next start tries again.",
                        failed.toString());
                inQueues.settled(recordQueue);
            } else {
                records.finishOnceDurable(finishRecord, recordQueue, sources, targets);
            }
            return null;
        }, executor);
    }
}
