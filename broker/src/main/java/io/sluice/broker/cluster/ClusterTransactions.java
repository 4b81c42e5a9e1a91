package io.sluice.broker.cluster;

import io.sluice.broker.error.BrokerException;
import io.sluice.broker.queue.Replication.TransactionPart;
import io.sluice.protocol.ErrorCode;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * The leader's side of rule R13 of docs/replication.md: a transaction's commit as one {@link TransactionEntry}, submitted
 * as any entry is, refused before anything is submitted when the cluster's entry level does not allow it (R12) or when it
 * would not fit one entry. The commit's answer waits for the entry to be applied here ({@link ShardApplier}).
 *
 * <p>Threads: thread-safe (the transaction coordinator's thread calls it; completions run on Ratis's threads or the
 * queues' executors).
 */
final class ClusterTransactions {
    /** Submits an entry (ClusterNode's submit): completes with true if Raft refused it while its submitter still waited. */
    interface Submitter {
        CompletableFuture<Boolean> submit(long call, byte[] entry, String what);
    }

    private final int nodeId;
    /** Every buffer on an entry's way holds one PUBLISH frame (RaftSettings); a transaction's entry must fit the same. */
    private final int maxEntryBytes;
    private final FinalizedEntryLevel level;
    private final Submissions submissions;
    private final Submitter submitter;
    private final Supplier<String> notLeader;

    ClusterTransactions(int nodeId, int maxEntryBytes, FinalizedEntryLevel level, Submissions submissions, Submitter submitter,
                        Supplier<String> notLeader) {
        this.nodeId = nodeId;
        this.maxEntryBytes = maxEntryBytes;
        this.level = level;
        this.submissions = submissions;
        this.submitter = submitter;
        this.notLeader = notLeader;
    }

    /** Null while the cluster's entry level allows transaction entries; else the sentence of the refusal. */
    String refused() {
        if (level.allows(TransactionEntry.VERSION)) {
            return null;
        }
        return "this cluster's entry level is " + level.writable() + " and replicated transactions need level "
                + TransactionEntry.LEVEL + " (rule R12 of docs/replication.md): once every node runs a broker that supports it, "
                + "POST /api/cluster/feature-level raises it" + (level.supported() < TransactionEntry.LEVEL
                ? "; this node's broker supports levels up to " + level.supported() : "");
    }

    /**
     * Submits transaction {@code number}'s entry; completes once it is applied here, exceptionally as
     * {@link io.sluice.broker.queue.Replication#commitTransaction} says.
     */
    CompletableFuture<Void> commit(long number, List<TransactionPart> parts) {
        String refusal = refused();
        if (refusal != null) {
            return CompletableFuture.failedFuture(new BrokerException(ErrorCode.NOT_REPLICATED, refusal));
        }
        for (TransactionPart part : parts) {
            if (part.headers().size() > TransactionEntry.MAX_MESSAGES_PER_QUEUE) {
                return CompletableFuture.failedFuture(new BrokerException(ErrorCode.TRANSACTION_LIMIT, "it publishes "
                        + part.headers().size() + " messages to queue '" + part.queue() + "', over the "
                        + TransactionEntry.MAX_MESSAGES_PER_QUEUE + " one replicated transaction may publish to a queue"));
            }
        }
        long bytes = TransactionEntry.encodedLength(parts);
        if (bytes > maxEntryBytes) {
            return CompletableFuture.failedFuture(new BrokerException(ErrorCode.TRANSACTION_LIMIT, "a cluster commits a "
                    + "transaction as one log entry, and its entry would take " + bytes + " bytes, over broker.max-frame-bytes "
                    + maxEntryBytes + "; publish and acknowledge less in one transaction"));
        }
        CompletableFuture<Void> applied = new CompletableFuture<>();
        long call = submissions.nextCall();
        submissions.applied(call, applied);
        submitter.submit(call, TransactionEntry.encode(nodeId, call, number, parts), "transaction " + number)
                .thenAccept(refused -> {
                    if (refused) {
                        applied.completeExceptionally(new BrokerException(ErrorCode.NOT_LEADER, notLeader.get()));
                    }
                });
        return applied;
    }
}
