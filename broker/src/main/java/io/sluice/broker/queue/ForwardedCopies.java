package io.sluice.broker.queue;

import io.sluice.storage.QueueStore;
import io.sluice.storage.StorageFailedException;
import io.sluice.storage.dedup.ProducerTable;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntConsumer;

/**
 * Stores in one queue the copies other queues forward to it (dead-letters, docs/flow-control.md): on a single broker
 * under this queue's quotas, as a publish would be; on a cluster node the leader's copy of rule R8
 * (docs/replication.md) with no check, under the identity of its log entry, once.
 *
 * <p>Threads: {@link #forward} may be called from any thread; the work runs on the queue's executor.
 */
final class ForwardedCopies {
    private final BrokerQueue queue;
    private final QueueStore store;
    private final DeliveryOrder order;
    private final ProducerRegistry producers;
    private final Backlog backlog;
    /** Tells the queue a copy of that many bytes was appended (its counters, flow and dispatch). */
    private final IntConsumer appended;
    /** Re-evaluates the queue's flow state: after a copy this node admitted left the uncommitted figures (R9). */
    private final Runnable updateFlow;
    /** Copies refused by the quota; written by the queue's executor, read by metrics and tests. */
    private volatile long refused;

    ForwardedCopies(BrokerQueue queue, QueueStore store, DeliveryOrder order, ProducerRegistry producers, Backlog backlog,
                    IntConsumer appended, Runnable updateFlow) {
        this.queue = queue;
        this.store = store;
        this.order = order;
        this.producers = producers;
        this.backlog = backlog;
        this.appended = appended;
        this.updateFlow = updateFlow;
    }

    /**
     * Stores a copy; completes with its id once it is durable, with -1 if it is a replicated copy this queue holds
     * already, or exceptionally with the reason it was refused. A replicated copy comes under {@link
     * ProducerTable#DEAD_LETTER_COPIES_PRODUCER_ID} with its log index as the sequence; {@code submittedHere}: this
     * node admitted it ({@link LeaderAdmission#admitCopy}), so it is no longer uncommitted.
     */
    CompletableFuture<Long> forward(long producerId, long producerSequence, ByteBuffer headers, ByteBuffer payload,
                                    boolean submittedHere) {
        boolean replicated = producerId == ProducerTable.DEAD_LETTER_COPIES_PRODUCER_ID;
        CompletableFuture<Long> stored = new CompletableFuture<>();
        queue.executor().execute(() -> {
            if (replicated && queue.applyHalt().halted()) {
                stored.completeExceptionally(new IllegalStateException(queue.applyHalt().reason()));
                return; // this node stopped applying the log: the entry is applied again after its restart (R2)
            }
            try {
                int bytes = headers.remaining() + payload.remaining();
                if (submittedHere) {
                    backlog.uncommittedDone(1, bytes);
                }
                if (queue.isClosed()) {
                    throw new IllegalStateException("queue '" + queue.name() + "' was deleted");
                }
                if (replicated && producers.holdsDeadLetterCopy(producerSequence)) {
                    stored.complete(-1L);
                    return;
                }
                // Before the quota's drop, which would make room for a copy the store refuses.
                StorageFailedException notStorable = replicated ? null : store.appendRefusal();
                if (notStorable != null) {
                    throw notStorable;
                }
                String refusal = replicated ? null : backlog.refusal(store.unackedMessages(), bytes, queue::dropOldest);
                if (refusal != null) {
                    refused++;
                    throw new IllegalStateException(refusal);
                }
                // A replicated copy is committed: stored whatever this node's max-message-bytes (rule R2).
                long id = replicated ? store.appendCommittedCopy(producerId, producerSequence, headers, payload)
                        : store.appendForwarded(producerId, producerSequence, headers, payload);
                order.appendedVisible(id);
                if (replicated) {
                    producers.deadLetterCopyStored(producerSequence, id, store.nowMillis());
                } else {
                    producers.appended(id);
                }
                appended.accept(bytes);
                completeWhenDurable(id, stored, id);
            } catch (RuntimeException e) {
                stored.completeExceptionally(e);
            } finally {
                if (submittedHere) {
                    updateFlow.run(); // a copy held already, or refused, left only the uncommitted figures: they may have blocked
                }
            }
        });
        return stored;
    }

    /**
     * Rule R13 of docs/replication.md: a committed transaction's messages for this queue ({@code headers[i]},
     * {@code payloads[i]}), stored with no quota check nor this node's max-message-bytes (R2) under {@link ProducerTable#CLUSTER_TRANSACTIONS_PRODUCER_ID} with
     * sequences {@code firstSequence + i}, each only if this queue does not hold it already (a node replaying its log).
     * Completes once the last one stored is durable (at once if none was), or exceptionally if the store refused one
     * (the applier then stops this node, rule R2) or this node stopped applying the log.
     */
    CompletableFuture<Void> forwardTransaction(long firstSequence, List<byte[]> headers, List<byte[]> payloads) {
        CompletableFuture<Void> stored = new CompletableFuture<>();
        queue.executor().execute(() -> {
            if (queue.applyHalt().halted()) {
                stored.completeExceptionally(new IllegalStateException(queue.applyHalt().reason()));
                return; // as above
            }
            try {
                if (queue.isClosed()) {
                    throw new IllegalStateException("queue '" + queue.name() + "' was deleted");
                }
                long lastId = -1;
                for (int i = 0; i < headers.size(); i++) {
                    long sequence = firstSequence + i;
                    if (producers.holdsTransactionMessage(sequence)) {
                        continue;
                    }
                    long id = store.appendCommittedCopy(ProducerTable.CLUSTER_TRANSACTIONS_PRODUCER_ID, sequence,
                            ByteBuffer.wrap(headers.get(i)), ByteBuffer.wrap(payloads.get(i)));
                    order.appendedVisible(id);
                    producers.transactionMessageStored(sequence, id, store.nowMillis());
                    appended.accept(headers.get(i).length + payloads.get(i).length);
                    lastId = id;
                }
                if (lastId < 0) {
                    stored.complete(null);
                } else {
                    completeWhenDurable(lastId, stored, null);
                }
            } catch (RuntimeException e) {
                stored.completeExceptionally(e);
            }
        });
        return stored;
    }

    /** Completes {@code out} with {@code value} once record {@code id} is durable, or with the store's failure. */
    private <T> void completeWhenDurable(long id, CompletableFuture<T> out, T value) {
        store.whenDurable(id).whenComplete((durable, error) -> {
            if (error != null) {
                out.completeExceptionally(error);
            } else {
                out.complete(value);
            }
        });
    }

    /** Copies refused by this queue's quota since it opened. */
    long refused() {
        return refused;
    }
}
