package io.sluice.broker.queue;

import io.sluice.broker.error.BrokerException;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoredMessage;
import io.sluice.storage.dedup.ProducerTable;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * One queue's side of the transactions that touch it (docs/transactions.md): the deliveries they
 * hold ({@link HeldAcks}), the backlog their staged publishes reserve, and the committed publishes
 * the coordinator applies.
 *
 * <ul>
 *   <li>T1 A held delivery stays unacknowledged and tracked (no reader, no drop-oldest, no purge
 *       takes it), but is off its consumer: its credit is settled at TX_ACK, and neither the ack
 *       timeout nor the consumer's leaving sends it again. Only the transaction's end releases it.</li>
 *   <li>T2 A staged publish counts in the queue's byte backlog from TX_PUBLISH (admitted by the quota
 *       as a publish would be) until it is applied or rolled back.</li>
 *   <li>T3 Committed publishes are appended under {@link ProducerTable#TRANSACTIONS_PRODUCER_ID} with
 *       sequences the coordinator hands out in commit order, so every sequence at or below
 *       {@link #appliedThrough()} is stored: a redo after a crash appends only those above it.</li>
 * </ul>
 *
 * <p>Threads: every method runs on the queue's executor; the public ones hand their work there and
 * complete a future.
 */
public final class QueueTransactions {
    /** What the queue does after this class changed its state. */
    interface Effects {
        /** Messages were acknowledged: count them, feed the slowed producers, re-evaluate the quota, dispatch. */
        void acked(long count);

        /** Messages went back to the front of the queue: count them as redelivered and dispatch. */
        void requeued(int count);

        /** Messages were appended: count them as published, re-evaluate the quota and dispatch. */
        void applied(int count);

        /** The byte backlog changed: re-evaluate the quota. */
        void backlogChanged();
    }

    /** A committed publish: the sequence the coordinator gave it, its encoded headers and its payload. */
    public record Committed(long sequence, byte[] headers, byte[] payload) {
        int bytes() {
            return headers.length + payload.length;
        }
    }

    private final BrokerQueue queue;
    private final QueueStore store;
    private final Backlog backlog;
    private final IdSet tracked;
    private final DeliveryOrder order;
    private final ProducerRegistry producers;
    private final Effects effects;
    /** Messages staged by open transactions (T2): their bytes are in the backlog already. */
    private long stagedMessages;
    /** Bytes of the messages staged by open transactions. */
    private long stagedBytes;
    /** Ids held by transactions (T1); their bytes are in the {@link HeldAcks} that holds them. */
    private final IdSet held = new IdSet();
    private long heldBytes;

    QueueTransactions(BrokerQueue queue, QueueStore store, Backlog backlog, IdSet tracked, DeliveryOrder order,
                      ProducerRegistry producers, Effects effects) {
        this.queue = queue;
        this.store = store;
        this.backlog = backlog;
        this.tracked = tracked;
        this.order = order;
        this.producers = producers;
        this.effects = effects;
    }

    // ------------------------------------------------------------------ acknowledgements (T1)

    /**
     * TX_ACK: takes the deliveries of {@code ranges} that are out with the consumer off it and holds
     * them. A range with none outstanding is the held set's {@link HeldAcks#problem()}.
     */
    CompletableFuture<HeldAcks> hold(Supplier<ConsumerSession> consumer, List<IdRange> ranges) {
        return on(() -> {
            ConsumerSession session = consumer.get();
            HeldAcks taken = new HeldAcks(queue);
            if (session == null || session.closed) {
                taken.problem("the consumer left queue '" + queue.name() + "' before the acknowledgement reached it");
                return taken;
            }
            for (IdRange range : ranges) {
                int hit = session.inFlight.removeRange(range.from(), range.to(), (id, bytes, appendedAtMillis) -> {
                    taken.add(id, bytes);
                    held.add(id);
                    heldBytes += bytes;
                });
                if (hit == 0) {
                    taken.problem("message ids " + range.from() + ".." + range.to() + " are not outstanding on consumer "
                            + session.tag + " of queue '" + queue.name() + "' (never delivered to it, already settled, or "
                            + "taken back after the ack timeout)");
                }
            }
            session.account.settle(taken.count());
            return taken;
        });
    }

    /** Commit: acknowledges what {@code acks} holds. */
    public CompletableFuture<Void> commitHeld(HeldAcks acks) {
        return on(() -> {
            if (queue.isClosed()) {
                return null;
            }
            long[] ids = new long[acks.count()];
            int count = 0;
            for (int i = 0; i < acks.count(); i++) {
                long id = acks.id(i);
                if (held.contains(id)) {
                    held.remove(id);
                    ids[count++] = id;
                    heldBytes -= acks.bytes(i);
                    backlog.removed(acks.bytes(i));
                    tracked.remove(id);
                }
            }
            store.ackAll(ids, count);
            if (count > 0) {
                effects.acked(count);
            }
            return null;
        });
    }

    /** Rollback: what {@code acks} holds goes back to the front of the queue, in id order; its next delivery counts one more. */
    public CompletableFuture<Void> release(HeldAcks acks) {
        return on(() -> {
            if (queue.isClosed()) {
                return null;
            }
            for (int i = 0; i < acks.count(); i++) {
                if (held.contains(acks.id(i))) {
                    heldBytes -= acks.bytes(i);
                }
            }
            long[] ids = acks.ids();
            java.util.Arrays.sort(ids);
            int count = 0;
            for (int i = ids.length - 1; i >= 0; i--) {
                if (held.contains(ids[i])) {
                    held.remove(ids[i]);
                    order.dueFirst(ids[i]);
                    count++;
                }
            }
            if (count > 0) {
                effects.requeued(count);
            }
            return null;
        });
    }

    /** Recovery of a committed transaction whose acknowledgements may not all have been applied: acknowledges each still stored. */
    public CompletableFuture<Long> ackRecovered(long[] ids) {
        return on(() -> {
            long newly = 0;
            for (long id : ids) {
                StoredMessage m = store.read(id);
                if (m != null) {
                    store.ack(id);
                    backlog.removed(m.headersLength() + m.payloadLength());
                    newly++;
                }
            }
            if (newly > 0) {
                effects.acked(newly);
            }
            return newly;
        });
    }

    // ------------------------------------------------------------------ publishes (T2, T3)

    /**
     * TX_PUBLISH: admits messages of {@code sizes} (headers plus payload each) as the quota admits a
     * publish, and reserves their bytes in the backlog; fails with QUEUE_BLOCKED (nothing reserved)
     * if the quota refuses one.
     */
    public CompletableFuture<Void> stage(int[] sizes) {
        return on(() -> {
            if (queue.isClosed()) {
                throw new BrokerException(ErrorCode.UNKNOWN_QUEUE, "queue '" + queue.name() + "' was deleted");
            }
            long reserved = 0;
            for (int i = 0; i < sizes.length; i++) {
                String refusal = backlog.refusal(store.unackedMessages() + stagedMessages + i, sizes[i], queue::dropOldest);
                if (refusal != null) {
                    backlog.removed(reserved);
                    throw new BrokerException(ErrorCode.QUEUE_BLOCKED, refusal);
                }
                backlog.added(sizes[i]);
                reserved += sizes[i];
            }
            stagedMessages += sizes.length;
            stagedBytes += reserved;
            effects.backlogChanged();
            return null;
        });
    }

    /** Rollback of staged publishes: their reservation goes. */
    public CompletableFuture<Void> unstage(int messages, long bytes) {
        return on(() -> {
            unreserve(messages, bytes);
            effects.backlogChanged();
            return null;
        });
    }

    /**
     * Appends the committed publishes whose sequence is above {@link #appliedThrough()} (T3), in
     * order; {@code reserved} if their bytes were staged here. Completes with the id of the last one
     * appended, or -1 if every one was stored already.
     */
    public CompletableFuture<Long> apply(List<Committed> publishes, boolean reserved) {
        return on(() -> {
            if (queue.isClosed()) {
                throw new BrokerException(ErrorCode.UNKNOWN_QUEUE, "queue '" + queue.name() + "' was deleted");
            }
            long last = -1;
            int appended = 0;
            try {
                for (Committed c : publishes) {
                    if (c.sequence() <= producers.transactionsAppliedThrough()) {
                        if (reserved) {
                            unreserve(1, c.bytes());
                        }
                        continue;
                    }
                    last = store.append(ProducerTable.TRANSACTIONS_PRODUCER_ID, c.sequence(), ByteBuffer.wrap(c.headers()),
                            ByteBuffer.wrap(c.payload()));
                    producers.storedByTransaction(c.sequence(), last);
                    if (reserved) { // its bytes stay in the backlog: now a stored message's
                        stagedMessages = Math.max(0, stagedMessages - 1);
                        stagedBytes = Math.max(0, stagedBytes - c.bytes());
                    } else {
                        backlog.added(c.bytes());
                    }
                    appended++;
                }
            } finally {
                if (appended > 0) {
                    effects.applied(appended);
                }
            }
            return last;
        });
    }

    /** The highest sequence of committed publishes stored here (T3); 0 if none. */
    public CompletableFuture<Long> appliedThroughAsync() {
        return on(this::appliedThrough);
    }

    long appliedThrough() {
        return producers.transactionsAppliedThrough();
    }

    /**
     * A future completed once the store's acknowledgements so far are durable, at the ack journal's next
     * force: what waits on it (a transaction's log records, X3) only has to follow, so it asks for no
     * force of its own.
     */
    public CompletableFuture<Void> whenAcksDurable() {
        return store.whenAcksDurable(false);
    }

    /** A future completed once record {@code id} of the store is durable. */
    public CompletableFuture<Long> whenDurable(long id) {
        return store.whenDurable(id);
    }

    private void unreserve(int messages, long bytes) {
        stagedMessages = Math.max(0, stagedMessages - messages);
        stagedBytes = Math.max(0, stagedBytes - bytes);
        backlog.removed(bytes);
    }

    // ------------------------------------------------------------------ for the queue

    long stagedMessages() {
        return stagedMessages;
    }

    boolean isHeld(long id) {
        return held.contains(id);
    }

    /** Bytes of the deliveries held and of the publishes staged: what a purge leaves in the backlog besides the consumers'. */
    long reservedBytes() {
        return heldBytes + stagedBytes;
    }

    private <T> CompletableFuture<T> on(Supplier<T> work) {
        return CompletableFuture.supplyAsync(work, queue.executor());
    }
}
