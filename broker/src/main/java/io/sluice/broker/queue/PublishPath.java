package io.sluice.broker.queue;

import io.sluice.broker.error.ErrorCodes;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.PublishCursor;
import io.sluice.protocol.PublishFrame;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StorageFailedException;
import io.sluice.storage.dedup.ProducerTable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;
import java.util.function.IntConsumer;
import java.util.function.LongConsumer;

/**
 * A queue's publish path: stores each PUBLISH frame's messages in the queue's store and queues their confirm, on a
 * single broker ({@link #publish}) and on a cluster node applying a committed PUBLISH entry ({@link #applyReplicated});
 * the copies other queues forward here go through its {@link ForwardedCopies}.
 * Each message is checked by the producer table first (P1, P2; on a cluster under the epochs the leader resolved,
 * rule R11 of docs/replication.md), then by the quota, which a replicated entry skips (R2: the leader checked it
 * before submitting, through the {@link LeaderAdmission} this class hands it to, R9). It also releases confirms (C1,
 * C2 of {@link PendingConfirms}) and tells the queue's publishers of flow state changes, for the whole queue: after
 * its acks, purges, dead-letters and transactions too.
 *
 * <p>Threads: the queue's executor. {@link #publish}, {@link #applyReplicated}, {@link #admit}, {@link #admitCopy},
 * {@link #admitTransactional}, {@link #transactionEnded},
 * {@link #forward}, {@link #notCommitted}, {@link #diskBlocked} and {@link #refuseUnconfirmedAtShutdown} may be called from any thread
 * and hand their work to it; {@link #recordConfirmLatency} sets a volatile field read there.
 */
final class PublishPath {
    /** The queue's logger: its flow and storage lines keep the category operators know them by. */
    private static final Logger LOG = LoggerFactory.getLogger(BrokerQueue.class);
    private static final LongConsumer NO_RECORDER = value -> { };

    private final BrokerQueue queue;
    private final QueueStore store;
    private final DeliveryOrder order;
    private final Backlog backlog;
    private final ProducerRegistry producers;
    private final QueuePublishers publishers;
    private final PendingConfirms pendingConfirms;
    private final LeaderAdmission admission;
    private final ForwardedCopies forwarded;
    /** Tells the queue that many messages were stored and are visible (its counter, its dispatch). */
    private final IntConsumer published;
    /** Messages refused here: by the producer table or the quota (executor). */
    private volatile long refused; // written by the queue's executor only; read by metrics and tests
    /** Set by the metrics (a no-op without them); called on the executor, once per frame when its confirm is released. */
    private volatile LongConsumer confirmLatencyNanos = NO_RECORDER;

    PublishPath(BrokerQueue queue, QueueStore store, DeliveryOrder order, Backlog backlog, ProducerRegistry producers,
                QueuePublishers publishers, PendingConfirms pendingConfirms, IntConsumer published) {
        this.queue = queue;
        this.store = store;
        this.order = order;
        this.backlog = backlog;
        this.producers = producers;
        this.publishers = publishers;
        this.pendingConfirms = pendingConfirms;
        this.published = published;
        this.admission = new LeaderAdmission(queue, backlog, publishers, producers, pendingConfirms, this::updateFlow,
                this::releaseConfirms);
        this.forwarded = new ForwardedCopies(queue, store, order, producers, backlog, bytes -> {
            backlog.added(bytes);
            updateFlow();
            published.accept(1);
        }, this::updateFlow);
    }

    /** Stores every message of the frame, then confirms (now, or when durable). Releases the frame. */
    void publish(ProducerLink connection, PublishFrame frame) {
        queue.executor().execute(() -> {
            try {
                publishNow(connection, frame, false, -1);
            } finally {
                frame.release();
            }
        });
    }

    /**
     * A cluster node applies a committed PUBLISH entry: as {@link #publish}, with no quota check (R2, R9). The
     * producer table still decides duplicates, the same on every node. {@code submittedHere}: this node admitted
     * the frame ({@link #admit}), which is no longer uncommitted. {@code position}: the entry's in the replicated log,
     * which its records carry; a message of it this queue decided before a restart is not decided again
     * ({@link AppliedPublishes}, rule R4a).
     */
    void applyReplicated(ProducerLink connection, PublishFrame frame, boolean submittedHere, ProducerEpochs epochs, long position) {
        ApplyHalt halt = queue.applyHalt();
        queue.executor().execute(() -> {
            try {
                if (halt.halted()) {
                    return; // this node stopped applying the log: the entry is applied again after its restart (R2)
                }
                if (submittedHere) {
                    backlog.uncommittedDone(frame.messageCount(), frame.messageBytes());
                }
                // Rule R11: the leader's epochs decide fencing, on every node alike.
                RuntimeException[] notStored = new RuntimeException[1];
                producers.withEntryEpochs(epochs, () -> notStored[0] = publishNow(connection, frame, true, position));
                if (notStored[0] != null) {
                    halt.failed("storing a message of the committed PUBLISH at log entry " + (position >>> 16) + " in queue '"
                            + queue.name() + "'", notStored[0]);
                    return;
                }
                if (submittedHere) {
                    // What it stored was evaluated with it; what it did not (resends, refusals) left only the uncommitted
                    // figures, which may have held the queue BLOCKED: without this it stayed so until a later publish or ack.
                    updateFlow();
                }
                admission.applied(frame);
            } finally {
                frame.release();
            }
        });
    }

    /** Rule R9: the leader's quota check before it submits a PUBLISH ({@link LeaderAdmission#admit}). */
    void admit(ProducerLink link, PublishFrame frame, long maxUncommittedBytes, BiConsumer<PublishFrame, ProducerEpochs> submit) {
        queue.executor().execute(() -> admission.admit(link, frame, maxUncommittedBytes, submit));
    }

    /** Rules R8 and R9: the leader's quota check of a dead-letter copy ({@link LeaderAdmission#admitCopy}); fails with the refusal. */
    CompletableFuture<Void> admitCopy(int messageBytes, long maxUncommittedBytes) {
        return CompletableFuture.supplyAsync(() -> admission.admitCopy(messageBytes, maxUncommittedBytes), queue.executor())
                .thenAccept(refusal -> {
                    if (refusal != null) {
                        throw new IllegalStateException(refusal);
                    }
                });
    }

    /**
     * Rule R13: the leader's quota check of a cluster transaction's TX_PUBLISH ({@link LeaderAdmission#admitTransactional});
     * completes with null if admitted, else the refusal. Any thread.
     */
    CompletableFuture<String> admitTransactional(int[] sizes, long maxUncommittedBytes) {
        return CompletableFuture.supplyAsync(() -> admission.admitTransactional(sizes, maxUncommittedBytes), queue.executor());
    }

    /** Rule R13: what {@link #admitTransactional} counted is no longer uncommitted ({@link LeaderAdmission#transactionEnded}). Any thread. */
    void transactionEnded(long messages, long messageBytes) {
        queue.executor().execute(() -> admission.transactionEnded(messages, messageBytes));
    }

    /** Stores a committed transaction's messages on a cluster node ({@link ForwardedCopies#forwardTransaction}). Any thread. */
    CompletableFuture<Void> forwardTransaction(long firstSequence, java.util.List<byte[]> headers, java.util.List<byte[]> payloads) {
        return forwarded.forwardTransaction(firstSequence, headers, payloads);
    }

    /** Stores a copy another queue forwards here ({@link ForwardedCopies#forward}). Any thread. */
    CompletableFuture<Long> forward(long producerId, long producerSequence, ByteBuffer headers, ByteBuffer payload,
                                    boolean submittedHere) {
        return forwarded.forward(producerId, producerSequence, headers, payload, submittedHere);
    }

    /** Rule R9: Raft refused a frame {@link #admit} counted. */
    void notCommitted(long messages, long messageBytes) {
        queue.executor().execute(() -> admission.notCommitted(messages, messageBytes));
    }

    /** This node lost its leadership: what it submitted is no longer its to answer for ({@link InFlightPublishes}). On the executor. */
    void leadershipLost() {
        admission.nothingInFlight();
    }

    /**
     * {@code position}: a replicated entry's in the log, -1 for a single broker's publish. Returns null, or the store's
     * failure that stopped a replicated publish: a committed message is never refused here (rule R2), so the messages
     * after it are not stored either and the node stops applying the log ({@link ApplyHalt}).
     */
    private RuntimeException publishNow(ProducerLink connection, PublishFrame frame, boolean replicated, long position) {
        long receivedAtNanos = System.nanoTime();
        long nowMillis = producers.deduplicates() ? store.nowMillis() : 0; // the producer table's clock, read once per frame
        if (queue.isClosed()) {
            connection.refuseAll(frame, ErrorCode.UNKNOWN_QUEUE, "queue '" + queue.name() + "' was deleted before the message was stored");
            return null;
        }
        PublishCursor cursor = frame.cursor();
        publishers.add(connection, backlog.state(), backlog.reason());
        PendingConfirms.StoredRanges stored = new PendingConfirms.StoredRanges();
        long lastId = -1;
        int storedMessages = 0;
        long storedBytes = 0;
        long storedHeld = 0;
        int refusedMessages = 0;
        long refusedBytes = 0;
        long refusedHeld = 0;
        long messages = store.unackedMessages();
        ByteBuffer frameBytes = null;
        int duplicates = 0;
        long duplicateBytes = 0;
        long duplicateHeld = 0;
        RefusalRun refusals = null;
        RuntimeException notStored = null;
        AppliedPublishes.Replay replay = position < 0 ? null : producers.appliedPublishes().replayOf(position);
        while (cursor.next()) {
            long producerId = cursor.producerId();
            long sequence = cursor.sequence();
            int payloadLength = cursor.payloadLength();
            int bytes = cursor.headersLength() + payloadLength;
            int windowBytes = connection.windowBytes(cursor.headersLength(), payloadLength);
            // Decided before this node's restart: answered as a resend, should anyone wait (R4a).
            ProducerTable.Verdict verdict = replay != null && replay.decided(producerId, sequence) ? ProducerTable.Verdict.DUPLICATE
                    : producers.check(connection, producerId, sequence, nowMillis);
            if (verdict == ProducerTable.Verdict.DUPLICATE) {
                // Stored before: confirmed again once everything written so far is durable (it is among it).
                stored.stored(producerId, sequence);
                duplicates++;
                duplicateBytes += windowBytes;
                duplicateHeld += bytes;
                continue;
            }
            // Counted before the refusal goes out: whoever reads the counter after the client heard of it sees it.
            if (verdict != ProducerTable.Verdict.NEW) {
                refusedMessages++;
                refusedBytes += windowBytes;
                refusedHeld += bytes;
                refused++;
                refusals = refusals != null ? refusals : new RefusalRun(connection);
                refusals.refuse(producerId, sequence,
                        verdict == ProducerTable.Verdict.FENCED ? ErrorCode.PRODUCER_FENCED : ErrorCode.SEQUENCE_OUT_OF_WINDOW,
                        producers.refusal(verdict, producerId));
                continue;
            }
            // A store that refuses every append (its storage failed) refuses this message before the quota's drop, which
            // would discard a message to make room for none. A replicated one has no quota: stored, or it stops the node (R2).
            StorageFailedException notStorable = replicated ? null : store.appendRefusal();
            String refusal = replicated || notStorable != null ? null : backlog.refusal(messages, bytes, queue::dropOldest);
            if (refusal != null) {
                refusedMessages++;
                refusedBytes += windowBytes;
                refusedHeld += bytes;
                refused++;
                refusals = refusals != null ? refusals : new RefusalRun(connection);
                refusals.refuse(producerId, sequence, ErrorCode.QUEUE_BLOCKED, refusal);
                continue;
            }
            try {
                if (notStorable != null) {
                    throw notStorable; // refused as the append would refuse it
                }
                if (frameBytes == null) {
                    frameBytes = cursor.nioBuffer();
                }
                if (position < 0) {
                    lastId = store.append(producerId, sequence, frameBytes, cursor.headersOffset(), cursor.headersLength(),
                            cursor.payloadOffset(), payloadLength);
                } else {
                    lastId = store.appendReplicated(position, producerId, sequence, frameBytes, cursor.headersOffset(),
                            cursor.headersLength(), cursor.payloadOffset(), payloadLength);
                    producers.appliedPublishes().stored(position, lastId);
                }
                producers.stored(connection, producerId, sequence, lastId, nowMillis);
                stored.stored(producerId, sequence);
                storedMessages++;
                storedBytes += windowBytes;
                storedHeld += bytes;
                backlog.added(bytes);
                messages++;
                continue;
            } catch (RuntimeException e) {
                if (replicated) {
                    notStored = e;
                    break;
                }
                ErrorCode code = ErrorCodes.of(e);
                String message = e.getMessage();
                if (code == ErrorCode.INTERNAL_ERROR) {
                    LOG.error("Queue '{}': storing a message from {} failed.", queue.name(), connection.describe(), e);
                    message = "the broker could not store the message; see the broker log";
                }
                refusals = refusals != null ? refusals : new RefusalRun(connection);
                refusals.refuse(producerId, sequence, code, message);
            }
            refusedMessages++;
            refusedBytes += windowBytes;
            refusedHeld += bytes;
        }
        if (refusals != null) {
            refusals.flush();
        }
        if (refusedMessages > 0) {
            connection.publishCredit(refusedMessages, refusedBytes, refusedHeld);
        }
        if (storedMessages > 0) {
            order.appendedVisible(lastId);
            pendingConfirms.add(lastId, connection, stored.build(), storedMessages + duplicates, duplicates,
                    storedBytes + duplicateBytes, storedHeld + duplicateHeld, receivedAtNanos);
            updateFlow();
            releaseConfirms();
            published.accept(storedMessages);
        } else if (duplicates > 0) {
            pendingConfirms.add(store.writtenIndex(), connection, stored.build(), duplicates, duplicates, duplicateBytes,
                    duplicateHeld, receivedAtNanos);
            releaseConfirms();
        }
        connection.flush();
        return notStored;
    }

    /**
     * Releases the confirms whose messages are durable, as far as the backlog lets them (C1, C2 of
     * {@link PendingConfirms}). If the store failed (docs/storage.md, rule "a failed force is final"),
     * nothing still waiting will ever be durable: each producer is told now.
     */
    void releaseConfirms() {
        pendingConfirms.release(store.durableIndex(), backlog, confirmLatencyNanos);
        StorageFailedException failed = store.failure();
        if (failed != null) {
            pendingConfirms.refuseAll(ErrorCode.STORAGE_FAILED, failed.getMessage());
        }
    }

    /** Re-evaluates the quota after a publish or an ack batch, and tells producers of a change. */
    void updateFlow() {
        backlog.storeDiscarded(store.discardedMessageBytes());
        FlowState now = backlog.update(store.unackedMessages()); // pending messages are stored: they count (T2)
        if (now != null) {
            LOG.info("Queue '{}' is now {}: {}.", queue.name(), now, backlog.reason());
            publishers.tell(now, backlog.reason());
        }
    }

    /**
     * Broker-wide disk guard: blocks (a reason) or unblocks (null) every producer of this queue, as {@code reasonNow}
     * says when the task runs, so that tasks of two changes that run in either order leave the latest.
     */
    void diskGuardChanged(java.util.function.Supplier<String> reasonNow) {
        queue.executor().execute(() -> {
            String reason = reasonNow.get();
            FlowState now = backlog.diskBlocked(reason);
            if (now != null) {
                LOG.info("Queue '{}' is now {}: {}.", queue.name(), now, reason == null ? "disk space is back" : reason);
                publishers.tell(now, reason == null ? "free disk space is above the reserve again" : backlog.reason());
            }
        });
    }

    /**
     * Graceful shutdown gave up waiting: every publish still unconfirmed is refused with
     * NOT_CONFIRMED_SHUTDOWN, so its producer knows to publish it again (it may be stored twice).
     */
    void refuseUnconfirmedAtShutdown() {
        queue.executor().execute(() -> pendingConfirms.refuseAll(ErrorCode.NOT_CONFIRMED_SHUTDOWN,
                "the broker is shutting down and did not confirm the message on queue '" + queue.name() + "'; publish it again"));
    }

    /** Where the publish-to-confirm latency goes (nanoseconds, one sample per PUBLISH frame when its confirm is released). */
    void recordConfirmLatency(LongConsumer confirmNanos) {
        this.confirmLatencyNanos = confirmNanos;
    }

    /** Messages refused by the producer table or the quota: here, by the leader's admission and as forwarded copies. */
    long refused() {
        return refused + admission.refused() + forwarded.refused();
    }
}
