package io.sluice.broker.queue;

import io.sluice.storage.QueueStore;
import io.sluice.storage.dedup.ProducerTable;

import java.nio.ByteBuffer;
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
    /** Copies refused by the quota (executor). */
    private long refused;

    ForwardedCopies(BrokerQueue queue, QueueStore store, DeliveryOrder order, ProducerRegistry producers, Backlog backlog,
                    IntConsumer appended) {
        this.queue = queue;
        this.store = store;
        this.order = order;
        this.producers = producers;
        this.backlog = backlog;
        this.appended = appended;
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
                String refusal = replicated ? null : backlog.refusal(store.unackedMessages(), bytes, queue::dropOldest);
                if (refusal != null) {
                    refused++;
                    throw new IllegalStateException(refusal);
                }
                long id = store.appendForwarded(producerId, producerSequence, headers, payload);
                order.appendedVisible(id);
                if (replicated) {
                    producers.deadLetterCopyStored(producerSequence, id, store.nowMillis());
                } else {
                    producers.appended(id);
                }
                appended.accept(bytes);
                store.whenDurable(id).whenComplete((durable, error) -> {
                    if (error != null) {
                        stored.completeExceptionally(error);
                    } else {
                        stored.complete(id);
                    }
                });
            } catch (RuntimeException e) {
                stored.completeExceptionally(e);
            }
        });
        return stored;
    }

    /** Copies refused by this queue's quota since it opened. */
    long refused() {
        return refused;
    }
}
