package io.sluice.broker.queue;

import io.netty.util.concurrent.EventExecutor;
import io.sluice.broker.error.BrokerException;
import io.sluice.protocol.ErrorCode;

import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * What connections and the broker's shutdown ask of one queue's producer state (its
 * {@link ProducerRegistry}): registering named producers, forgetting a closed connection's, a last
 * checkpoint. Thread-safe: each call hands its work to the queue's executor, which owns the registry.
 */
public final class QueueProducerState {
    private final BrokerQueue queue;
    private final ProducerRegistry producers;
    private final EventExecutor executor;

    QueueProducerState(BrokerQueue queue, ProducerRegistry producers, EventExecutor executor) {
        this.queue = queue;
        this.producers = producers;
        this.executor = executor;
    }

    /**
     * Registers an instance of the named producer {@code producerId} on {@code connection}
     * ({@link ProducerRegistry#register}); completes with the epoch granted, -1 if fenced, or
     * exceptionally if the queue keeps no producer state or its checkpoint failed.
     */
    public CompletableFuture<ProducerRegistry.Registered> register(ClientConnection connection, long producerId, int requestedEpoch) {
        return registering(() -> producers.register(connection, producerId, requestedEpoch));
    }

    /**
     * Rule R11 of docs/replication.md, on a cluster node applying a PRODUCER_INIT entry at {@code position}
     * ({@link ProducerRegistry#registerReplicated}): {@code submitter} is the client's connection on the node that
     * submitted it, null on every other. Nothing of this node's own decides the outcome; a replayed one changes nothing.
     */
    public CompletableFuture<ProducerRegistry.Registered> registerReplicated(ClientConnection submitter, long producerId,
                                                                             int requestedEpoch, long position) {
        return registering(() -> queue.applyHalt().halted()
                // This node stopped applying the log (rule R2): the registration is applied again after its restart.
                ? CompletableFuture.failedFuture(new IllegalStateException(queue.applyHalt().reason()))
                : producers.registerReplicated(submitter, producerId, requestedEpoch, position));
    }

    /**
     * Rule R11, on a cluster's leader before it submits a registration: whether a resume names an epoch the queue
     * granted ({@link ProducerRegistry#checkGranted}) and the queue has room for one more named producer's owner
     * ({@link ProducerRegistry#checkOwnerRoom}); if so, runs {@code submit} on the queue's executor,
     * behind the work queued there before (a PUBLISH the client sends after the registration is admitted, and so
     * submitted, after it). Completes exceptionally with the refusal, nothing submitted.
     */
    public CompletableFuture<Void> admitRegistration(long producerId, int requestedEpoch, Runnable submit) {
        return CompletableFuture.runAsync(() -> {
            if (queue.isClosed()) {
                throw new BrokerException(ErrorCode.UNKNOWN_QUEUE, "queue '" + queue.name() + "' was deleted");
            }
            producers.checkGranted(requestedEpoch);
            producers.checkOwnerRoom(producerId);
            submit.run();
        }, executor);
    }

    /** Runs {@code registration} on the queue's executor, unless the queue was deleted or keeps no producer state. */
    private CompletableFuture<ProducerRegistry.Registered> registering(
            Supplier<CompletableFuture<ProducerRegistry.Registered>> registration) {
        return CompletableFuture.supplyAsync(() -> {
            boolean closed = queue.isClosed();
            if (closed || !producers.deduplicates()) {
                throw new BrokerException(closed ? ErrorCode.UNKNOWN_QUEUE : ErrorCode.INVALID_PRODUCER, closed
                        ? "queue '" + queue.name() + "' was deleted"
                        : "queue '" + queue.name() + "' keeps no producer state: deduplication is off on this broker (queues.dedup-enabled)");
            }
            return registration.get();
        }, executor).thenCompose(registered -> registered);
    }

    /** {@code connection}, on which named producers registered here, closed: they are no longer its, nor is it held. */
    public void connectionClosed(ClientConnection connection) {
        if (executor.isShuttingDown()) {
            return; // the broker stops: the queue goes, and what it holds with it
        }
        executor.execute(() -> producers.connectionClosed(connection));
    }

    /** On the queue's executor: the fences the registry keeps for superseded instances ({@link ProducerRegistry#fencesKept}). */
    int fencesKept() {
        return producers.fencesKept();
    }

    /** At shutdown: a last producer checkpoint if anything changed since the last, so the next start replays nothing. */
    public CompletableFuture<Void> checkpoint() {
        return CompletableFuture.supplyAsync(() -> !producers.changedSinceCheckpoint()
                ? CompletableFuture.<Void>completedFuture(null) : producers.checkpoint(), executor).thenCompose(done -> done);
    }
}
