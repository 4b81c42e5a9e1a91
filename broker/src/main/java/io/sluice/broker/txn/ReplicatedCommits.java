package io.sluice.broker.txn;

import io.sluice.broker.error.BrokerException;
import io.sluice.broker.error.ErrorCodes;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.HeldAcks;
import io.sluice.broker.queue.Replication;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishCursor;
import io.sluice.protocol.PublishFrame;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Transactions on a cluster node (docs/transactions.md, "On a cluster"; rule R13 of docs/replication.md). Nothing a
 * transaction does is stored before its commit: its TX_PUBLISH messages are kept in memory on the leader (bounded by
 * {@code transactions.max-bytes} and {@code max-messages}), its TX_ACKs hold their deliveries as on a single broker (T1),
 * and TX_COMMIT replicates the whole of it as one log entry, which Raft commits or not as a whole. OK goes out once the
 * entry is applied here, its messages durable. A commit whose entry Raft did not commit while this node waited has an
 * unknown outcome (a next leader may still commit it): it is not answered, and the connection is closed with NOT_LEADER
 * (rule S1), as for a CONFIRM that never came; what it held is given back here, and acknowledged if the entry commits.
 *
 * <p>Threads: {@link #copy} on the connection's event loop; the rest on the coordinator's thread.
 */
final class ReplicatedCommits {
    private static final Logger LOG = LoggerFactory.getLogger(ReplicatedCommits.class);

    private ReplicatedCommits() {
    }

    /**
     * One TX_PUBLISH's messages, copied out of its frame: nothing is stored before the commit. {@code refusal} is null
     * if the queue's quota admitted them ({@link #admit}): they then count as uncommitted in the queue until the
     * transaction ends ({@link #ended}); else it says why they were refused, and they count nowhere.
     */
    record Messages(BrokerQueue queue, List<byte[]> headers, List<byte[]> payloads, long bytes, String refusal) {
        int count() {
            return headers.size();
        }

        /** Headers plus payload of each message, as quotas count them. */
        int[] sizes() {
            int[] sizes = new int[headers.size()];
            for (int i = 0; i < sizes.length; i++) {
                sizes[i] = headers.get(i).length + payloads.get(i).length;
            }
            return sizes;
        }

        Messages refusedBecause(String why) {
            return new Messages(queue, headers, payloads, bytes, why);
        }
    }

    /**
     * Rules R9 and R13: the queue's quota checks the messages as a single broker's staging does (T2: the same refusals
     * and reasons, drop-oldest's drops), and counts them as uncommitted until the transaction ends, so that an open
     * transaction's messages feed the queue's flow state and {@code cluster.max-uncommitted-bytes}. Completes with the
     * messages, {@code refusal} set if refused.
     */
    static CompletableFuture<Messages> admit(Messages messages, long maxUncommittedBytes) {
        CompletableFuture<String> refusal;
        try {
            refusal = messages.queue().admitTransactional(messages.sizes(), maxUncommittedBytes);
        } catch (RuntimeException e) { // the queue's executor is shut down: the queue was deleted
            refusal = CompletableFuture.failedFuture(e);
        }
        return refusal.handle((why, failed) -> failed == null ? why == null ? messages : messages.refusedBecause(why)
                : messages.refusedBecause("queue '" + messages.queue().name() + "' was deleted"));
    }

    /** The transaction ended (committed, rolled back or refused): admitted messages no longer count as uncommitted. */
    static void ended(Messages messages) {
        if (messages.refusal() == null) {
            messages.queue().transactionEnded(messages.count(), messages.bytes());
        }
    }

    /** Copies the frame's messages (the frame is the caller's to release); {@link #admit} checks them against the quota. */
    static Messages copy(BrokerQueue queue, PublishFrame frame) {
        List<byte[]> headers = new ArrayList<>(frame.messageCount());
        List<byte[]> payloads = new ArrayList<>(frame.messageCount());
        long bytes = 0;
        PublishCursor cursor = frame.cursor();
        while (cursor.next()) {
            byte[] h = new byte[cursor.headersLength()];
            cursor.encodedHeaders().getBytes(0, h);
            byte[] p = new byte[cursor.payloadLength()];
            cursor.payload().getBytes(0, p);
            headers.add(h);
            payloads.add(p);
            bytes += h.length + p.length;
        }
        return new Messages(queue, headers, payloads, bytes, null);
    }

    /**
     * The transaction's parts, one per queue it publishes to or acknowledges in, in the order it first touched them.
     * Rule "a part of a deleted queue is skipped" (X6 on a single broker): a part names its queue by name, and a queue
     * deleted since the transaction touched it may have been declared again under that name, its ids starting over,
     * so the part's acknowledgements would remove the new queue's messages and its messages land there. What the
     * transaction did in a queue that is gone went with it. Left open: a delete and a declare whose entries the log
     * orders before this commit's but which this leader had not applied when it built the parts (one round trip).
     */
    static List<Replication.TransactionPart> parts(Transaction t) {
        List<Replication.TransactionPart> parts = new ArrayList<>();
        for (Map.Entry<BrokerQueue, List<Messages>> e : t.collected.entrySet()) {
            if (e.getKey().isClosed()) {
                continue;
            }
            List<byte[]> headers = new ArrayList<>();
            List<byte[]> payloads = new ArrayList<>();
            for (Messages m : e.getValue()) {
                headers.addAll(m.headers());
                payloads.addAll(m.payloads());
            }
            parts.add(new Replication.TransactionPart(e.getKey().name(), headers, payloads, ranges(t.held.get(e.getKey()))));
        }
        t.held.forEach((q, held) -> {
            if (!t.collected.containsKey(q) && !q.isClosed()) {
                parts.add(new Replication.TransactionPart(q.name(), List.of(), List.of(), ranges(held)));
            }
        });
        return parts;
    }

    /** The held ids as ascending ranges. */
    static List<IdRange> ranges(List<HeldAcks> held) {
        if (held == null) {
            return List.of();
        }
        long[] ids = held.stream().flatMapToLong(h -> Arrays.stream(h.ids())).sorted().distinct().toArray();
        List<IdRange> ranges = new ArrayList<>();
        for (int i = 0; i < ids.length; ) {
            int j = i;
            while (j + 1 < ids.length && ids[j + 1] == ids[j] + 1) {
                j++;
            }
            ranges.add(new IdRange(ids[i], ids[j]));
            i = j + 1;
        }
        return ranges;
    }

    /** Whether a failed commit's entry may still be committed: then the client must not be told it was rolled back. */
    static boolean outcomeUnknown(Throwable failure) {
        Throwable cause = ErrorCodes.unwrap(failure);
        return cause instanceof BrokerException b && b.code() == ErrorCode.NOT_LEADER;
    }

    /** Whether nothing of a failed commit was submitted (refused before the log: too large, or the entry level). */
    static boolean notSubmitted(Throwable failure) {
        ErrorCode code = ErrorCodes.of(failure);
        return code == ErrorCode.TRANSACTION_LIMIT || code == ErrorCode.NOT_REPLICATED;
    }

    static void logUnknown(Transaction t, Throwable failure) {
        LOG.info("{}: its commit's log entry was not committed while this node led ({}); it may still be committed by the "
                + "next leader, so its client is not told it was rolled back: its connection is closed (NOT_LEADER), as for a "
                + "CONFIRM that never came. What it held is given back here.", t.describe(), ErrorCodes.unwrap(failure).toString());
    }
}
