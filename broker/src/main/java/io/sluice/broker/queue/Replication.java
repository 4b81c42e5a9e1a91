package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.StoredMessage;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * How the queues' state changes reach the other nodes of a cluster (docs/replication.md): a declare, a
 * PUBLISH frame and the acknowledgements of an ACK frame become entries of a replicated log, and every
 * node applies the committed entries to its own queues in log order. A single broker has none
 * ({@link QueueManager#replication()} is null) and its queues change directly, as always.
 *
 * <p>Threads: every method may be called from any thread; {@link #acked} is called on the queue's executor.
 */
public interface Replication {
    /**
     * Null if this node serves clients now (it is the leader and has applied what was committed before it
     * became one); else why not, as a NOT_LEADER reason ({@link io.sluice.protocol.LeaderHint}).
     */
    String notLeader();

    /**
     * True while this node cannot send a client that asked at {@code askedAtNanos} ({@link System#nanoTime})
     * to a node known to be alive: an election runs, the leader went silent or has not been heard from since
     * the client asked, or this node was just elected and is still applying the log. A HELLO then waits for
     * a leader (rule S2 of docs/replication.md) rather than being refused at once.
     */
    boolean awaitingLeader(long askedAtNanos);

    /** How long a HELLO waits for a leader while {@link #awaitingLeader} (rule S2); then it is refused with NOT_LEADER. */
    long leaderWaitMillis();

    /**
     * Replicates the frame and, once its entry is committed, stores it in {@code queue} here with confirms
     * going to {@code link}, as {@link BrokerQueue#publish} would; if the entry cannot be committed the
     * messages are refused on {@code link}. Takes the frame over (releases it).
     */
    void publish(BrokerQueue queue, ProducerLink link, PublishFrame frame);

    /** Replicates a declare of a new queue; completes as {@link QueueManager#declareGrouped} does, once applied here. */
    CompletableFuture<BrokerQueue> declare(String name, QueueSettings settings);

    /**
     * The queue acknowledged these message ids here (a consumer's ACK, settled already on this node):
     * replicated so that every node drops them. Best effort: an ack lost with the leader only means a
     * redelivery after the failover (at-least-once). Called on the queue's executor.
     */
    void acked(BrokerQueue queue, List<IdRange> ids);

    /**
     * Replicates the delete of queue {@code name} (rule R7 of docs/replication.md); completes with whether it
     * existed once the entry is applied here, when every node deletes it too.
     */
    CompletableFuture<Boolean> delete(String name);

    /**
     * A purge picked these message ids here and holds them (rule R7, {@link #purge}): replicated as acks, like
     * {@link #acked}, but completes once the entries are committed and applied here, so that a purge answered OK is on
     * a majority of disks; exceptionally (NOT_LEADER) if they could not be committed. Called on the queue's executor.
     */
    CompletableFuture<Void> purged(BrokerQueue queue, List<IdRange> ids);

    /**
     * Rule R9 of docs/replication.md: {@code drop-oldest} dropped message {@code id} of {@code queue} here and holds it
     * ({@link LeaderHold}): replicated as an ACK entry, like {@link #acked}, submitted before the PUBLISH it made room
     * for, but completes once the entry is committed and applied here, when this node's store drops the message as every
     * node's does; exceptionally (NOT_LEADER) if it could not be committed, and the queue gives the message back. Called
     * on the queue's executor.
     */
    CompletableFuture<Void> dropped(BrokerQueue queue, long id);

    /**
     * Rule R8 of docs/replication.md: this node, the leader, decided to move {@code original} of {@code source} to
     * {@code deadLetterQueue} with these headers (the delivery count and the reason are the leader's alone).
     * Replicated: every node stores the same copy in the dead-letter queue, in log order, so under the same id,
     * and lets go of the original once the copy is durable. Completes once that is done here; exceptionally if
     * the entry could not be committed (the leader lost its leadership).
     */
    CompletableFuture<Void> deadLetter(BrokerQueue source, StoredMessage original, String deadLetterQueue, ByteBuffer headers);

    /**
     * Rule R11 of docs/replication.md: replicates the registration of an instance of the named producer
     * {@code producerName} ({@code producerId}) with {@code queue}, so that every node grants the same epoch in log
     * order; completes as {@link QueueProducerState#register} does once the entry is applied here, with the
     * registration's connection {@code connection}; exceptionally (NOT_LEADER) if it could not be committed.
     */
    CompletableFuture<ProducerRegistry.Registered> registerProducer(BrokerQueue queue, ClientConnection connection,
                                                                    String producerName, long producerId, int requestedEpoch);

    /**
     * Rule R10 of docs/replication.md: this node, the leader, delivered {@code ids[i]} of {@code queue} for the
     * {@code counts[i]}-th time (the first {@code n}; the arrays are reused once this returns), recorded here already.
     * Replicated best effort, never waited for: a delivery lost with the leader is only counted lower after the
     * failover. Called on the queue's executor.
     */
    void delivered(BrokerQueue queue, long[] ids, int[] counts, int n);

    /**
     * One queue's part of a transaction committed on a cluster (rule R13 of docs/replication.md): the messages it
     * publishes there ({@code headers[i]} in the wire's encoded form, {@code payloads[i]}) and the ids it acknowledges
     * there.
     */
    record TransactionPart(String queue, List<byte[]> headers, List<byte[]> payloads, List<IdRange> acks) {
    }

    /**
     * Rule R13 of docs/replication.md: null if this node may commit transactions now; else why not (the cluster's entry
     * level is below the one their entries need), as the sentence of a NOT_REPLICATED refusal.
     */
    default String transactionsRefused() {
        return "this cluster node does not replicate transactions";
    }

    /**
     * Rule R13 of docs/replication.md: replicates the whole effect of transaction {@code number} as one entry, which Raft
     * commits or not as a whole; every node stores its messages and acknowledges its ids when it applies the entry.
     * Completes once it is applied here and its messages are durable here (what a CONFIRM means); exceptionally with a
     * {@link io.sluice.broker.error.BrokerException} TRANSACTION_LIMIT (it would not fit one entry: nothing was submitted)
     * or NOT_REPLICATED (the entry level does not allow it: nothing was submitted), or NOT_LEADER (Raft did not commit it
     * while this node waited: it may still be committed by the next leader, so its outcome is unknown).
     */
    default CompletableFuture<Void> commitTransaction(long number, List<TransactionPart> parts) {
        return CompletableFuture.failedFuture(new io.sluice.broker.error.BrokerException(
                io.sluice.protocol.ErrorCode.NOT_REPLICATED, transactionsRefused()));
    }

    /**
     * Rule R9 of docs/replication.md: the bytes submitted and not yet applied past which a queue's producers are blocked
     * ({@code cluster.max-uncommitted-bytes}); 0 for no such bound.
     */
    default long maxUncommittedBytes() {
        return 0;
    }

    /**
     * A cluster's purge (rule R7 of docs/replication.md): this node, the leader, picks what a single broker's purge would
     * remove and holds it out of dispatch ({@link BrokerQueue#holdForPurge}), replicates its ranges ({@link #purged}), and
     * completes with their number once they are committed and applied here, when this node's store drops them as every
     * node's does. If they are not committed, what is still held is given back ({@link BrokerQueue#purgeNotCommitted})
     * and the answer fails (NOT_LEADER). The ids are picked on the queue's executor, and {@link #purged} is called there
     * too (the hold's future notifies its listeners on the executor that ran it).
     */
    default CompletableFuture<Long> purge(BrokerQueue queue) {
        CompletableFuture<Long> answer = new CompletableFuture<>();
        queue.holdForPurge().addListener(hold -> {
            if (!hold.isSuccess()) {
                answer.completeExceptionally(hold.cause());
                return;
            }
            List<IdRange> held = ((QueuePurge.Held) hold.getNow()).ranges();
            long purged = ((QueuePurge.Held) hold.getNow()).count();
            CompletableFuture<Void> applied;
            try {
                applied = held.isEmpty() ? CompletableFuture.completedFuture(null) : purged(queue, held);
            } catch (RuntimeException e) {
                applied = CompletableFuture.failedFuture(e);
            }
            applied.whenComplete((done, failure) -> {
                if (failure != null) {
                    queue.purgeNotCommitted(held);
                    answer.completeExceptionally(failure);
                } else {
                    answer.complete(purged);
                }
            });
        });
        return answer;
    }
}
