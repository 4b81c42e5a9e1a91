package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.StoredMessage;

import java.nio.ByteBuffer;
import java.util.ArrayList;
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
     * A purge removed these message ids here (rule R7): replicated as acks, like {@link #acked}, but completes
     * once the entry is committed and applied here, so that a purge answered OK is on a majority of disks.
     * Called on the queue's executor.
     */
    CompletableFuture<Void> purged(BrokerQueue queue, List<IdRange> ids);

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

    /** Headers plus payload of the frame's messages, as quotas count them (rule R9's uncommitted bytes). */
    static long bytes(PublishFrame frame) {
        return Backlog.bytes(frame);
    }

    /**
     * A cluster's purge (rule R7): this node, the leader, purges {@code queue} as a single broker does, then
     * replicates the removed ids ({@link #purged}); completes with the number removed once they are committed
     * and applied here. The ids are collected on the queue's executor, and {@link #purged} is called there too
     * (the purge's future notifies its listeners on the executor that ran it).
     */
    default CompletableFuture<Long> purge(BrokerQueue queue) {
        CompletableFuture<Long> answer = new CompletableFuture<>();
        List<IdRange> removedIds = new ArrayList<>();
        queue.purge(removedIds).addListener(purge -> {
            if (!purge.isSuccess()) {
                answer.completeExceptionally(purge.cause());
                return;
            }
            long removed = (Long) purge.getNow();
            try {
                purged(queue, removedIds).whenComplete((applied, failure) -> {
                    if (failure != null) {
                        answer.completeExceptionally(failure);
                    } else {
                        answer.complete(removed);
                    }
                });
            } catch (RuntimeException e) {
                answer.completeExceptionally(e);
            }
        });
        return answer;
    }
}
