package io.sluice.broker.txn;

import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.HeldAcks;
import io.sluice.broker.queue.QueueTransactions;
import io.sluice.protocol.ErrorCode;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * One transaction of a connection: what it staged, what it holds, and where it is in its life.
 *
 * <pre>
 * OPEN --TX_COMMIT--> COMMITTING --staged durable, commit record durable, applied--> FINISHED
 *   |                      `--staged records or commit record refused--> FINISHED (rolled back)
 *   |--TX_ROLLBACK, connection closed--> FINISHED (rolled back)
 *   `--timeout, a refused operation, a cap--> ABORTED (rolled back; told with TX_ABORTED)
 *                                               `--TX_COMMIT (answered with the reason), TX_ROLLBACK--> FINISHED
 * </pre>
 *
 * <p>Threads: everything is the coordinator thread's but the identity, set at construction, {@link #started}
 * and {@link #commitReceived}.
 */
final class Transaction {
    enum State { OPEN, COMMITTING, ABORTED, FINISHED }

    /** The messages staged in one queue, pending there until the commit (T2 of QueueTransactions). */
    static final class Staged {
        final BrokerQueue queue;
        long[] ids = new long[16];
        int count;
        long bytes;
        long lastId = -1;

        Staged(BrokerQueue queue) {
            this.queue = queue;
        }

        void add(QueueTransactions.Staging staging) {
            if (count + staging.count() > ids.length) {
                ids = Arrays.copyOf(ids, Math.max(ids.length * 2, count + staging.count()));
            }
            for (int i = 0; i < staging.count(); i++) {
                long id = staging.id(i);
                ids[count++] = id;
                lastId = Math.max(lastId, id);
            }
            bytes += staging.bytes();
        }

        long[] ids() {
            return Arrays.copyOf(ids, count);
        }
    }

    /** The connection's transactions, which forget this one once it is finished. */
    final ConnectionTransactions owner;
    final TransactionLink link;
    /** The id the client chose, unique among its connection's transactions. */
    final long clientId;
    /** The broker-wide number its log records carry. */
    final long number;
    final long startedNanos = System.nanoTime();

    State state = State.OPEN;
    ErrorCode abortCode;
    String abortReason;
    /** The commit record was built: a hold or staging that completes now is not part of it and is undone. */
    boolean sealed;
    /** Stagings and holds still in flight; a commit waits for them. */
    final List<CompletableFuture<?>> pending = new ArrayList<>();
    /**
     * Stagings and holds the connection's loop started, in frame order, each of which reaches the coordinator's
     * thread once, when it completes; the commit moves them into {@link #pending} first. Filled on the loop,
     * drained on the coordinator's thread: the loop adds before it hands over the TX_COMMIT.
     */
    final Queue<CompletableFuture<?>> started = new ConcurrentLinkedQueue<>();
    /** The connection's loop has passed this transaction's TX_COMMIT: a TX_PUBLISH after it is not part of it. Loop only. */
    boolean commitReceived;
    final Map<BrokerQueue, Staged> staged = new LinkedHashMap<>();
    final Map<BrokerQueue, List<HeldAcks>> held = new LinkedHashMap<>();
    /** On a cluster node: what it publishes, by queue, kept in memory until the commit's entry ({@link ReplicatedCommits}). */
    final Map<BrokerQueue, List<ReplicatedCommits.Messages>> collected = new LinkedHashMap<>();
    /** Messages published plus acknowledged, and bytes published, for the caps. */
    int messages;
    long bytes;
    ScheduledFuture<?> timeout;
    long commitRequestId;
    /** Its commit record's id: in the log, or in {@link #commitRecordQueue} if it was written there (T5). */
    long commitRecordId = -1;
    /** The one target queue its commit record was written in, or null if it is in the log. */
    BrokerQueue commitRecordQueue;
    boolean durable;

    Transaction(ConnectionTransactions owner, TransactionLink link, long clientId, long number) {
        this.owner = owner;
        this.link = link;
        this.clientId = clientId;
        this.number = number;
    }

    boolean takesOperations() {
        return state == State.OPEN;
    }

    String describe() {
        return "transaction " + clientId + " of " + link.describe();
    }
}
