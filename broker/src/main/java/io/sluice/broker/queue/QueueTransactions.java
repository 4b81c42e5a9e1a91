package io.sluice.broker.queue;

import io.sluice.broker.error.ErrorCodes;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishCursor;
import io.sluice.protocol.PublishFrame;
import io.sluice.storage.MessageTooLargeException;
import io.sluice.storage.QueueIncarnation;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StorageException;
import io.sluice.storage.StorageFailedException;
import io.sluice.storage.StoredMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.LongConsumer;
import java.util.function.LongPredicate;
import java.util.function.Supplier;

/**
 * One queue's side of the transactions that touch it (docs/transactions.md): the deliveries they
 * hold ({@link HeldAcks}), and the messages they stage here, appended at TX_PUBLISH and kept from
 * the readers until their transaction commits.
 *
 * <ul>
 *   <li>T1 A held delivery stays unacknowledged and tracked (no reader, no drop-oldest, no purge
 *       takes it), but is off its consumer: its credit is settled at TX_ACK, and neither the ack
 *       timeout nor the consumer's leaving sends it again. Only the transaction's end releases it.</li>
 *   <li>T2 A staged message is stored at TX_PUBLISH, admitted by the quota as a publish would be,
 *       and counts in the queue's backlog (messages and bytes) from then on. Until its transaction
 *       commits it is <em>pending</em>: the reader skips it without stopping ({@link DeliveryOrder}),
 *       and neither drop-oldest nor purge takes it; it is not in the message count clients see. Its
 *       TX_PUBLISH's window goes back as a publish's confirm would (paced while slowed), and its
 *       connection is told the queue's FLOW changes.</li>
 *   <li>T3 A commit makes its pending messages visible here, in memory only: the commit record in
 *       the transaction log is what makes them visible across a restart. A rollback acknowledges
 *       (discards) them.</li>
 *   <li>T4 At a start, the records found staged ({@link StagedAtOpen}) stay pending until the
 *       coordinator says which transactions committed ({@link #recoverStaged}); the others' are
 *       discarded before any client is served.</li>
 *   <li>T5 A transaction whose messages all went to this queue has its commit record written here,
 *       after them ({@link #writeCommitRecord}): a staged record too, pending (never delivered, out of
 *       the message count and the backlog's bytes, left by purge and drop-oldest; it counts as a message
 *       in the store's, as the quota sees it) until the coordinator finishes it
 *       ({@link #finishCommitRecord}). One force of this queue makes the messages and the record
 *       durable, since the durable part of a queue is a prefix. At a start the commit records found
 *       ({@link #commitRecordsFound}) stay pending whatever {@link #recoverStaged} decides for the
 *       messages, unless their transaction is taken as rolled back (a damaged record).</li>
 *   <li>T6 Closed for a delete is not gone: the files stay until the delete's wait (X5 of the coordinator) is
 *       over, and a crash meanwhile brings the queue back whole. So the messages here count as acknowledged
 *       for finishing a commit record ({@link #acknowledgedBelow}, {@link #isAcknowledged}) only once the
 *       files are deleted ({@link #filesDeleted}), and a commit applied after the close still stores its
 *       acknowledgements here ({@link #commit}).</li>
 * </ul>
 *
 * <p>Threads: every method runs on the queue's executor, but for those that say otherwise; the
 * public ones hand their work there and complete a future.
 */
public final class QueueTransactions {
    private static final Logger LOG = LoggerFactory.getLogger(QueueTransactions.class);

    /** What the queue does after this class changed its state. */
    interface Effects {
        /** Messages were acknowledged: count them, feed the slowed producers, re-evaluate the quota, dispatch. */
        void acked(long count);

        /** Messages went back to the front of the queue: count them as redelivered and dispatch. */
        void requeued(int count);

        /** Pending messages became visible: count them as published, re-evaluate the quota and dispatch. */
        void visible(int count);

        /** The backlog changed: re-evaluate the quota and release what it lets go. */
        void backlogChanged();
    }

    /**
     * What one TX_PUBLISH frame staged here: the ids appended, in order, their headers-plus-payload
     * bytes, and, if the queue refused a message, why (the messages after it were not stored).
     * Immutable once its future completes.
     */
    public static final class Staging {
        private long[] ids;
        private int count;
        private long bytes;
        private ErrorCode refusalCode;
        private String refusal;

        Staging(int capacity) {
            ids = new long[Math.max(1, capacity)];
        }

        private void add(long id, int messageBytes) {
            if (count == ids.length) {
                ids = Arrays.copyOf(ids, count * 2);
            }
            ids[count++] = id;
            bytes += messageBytes;
        }

        private void refuse(ErrorCode code, String why) {
            refusalCode = code;
            refusal = why;
        }

        public int count() {
            return count;
        }

        public long id(int i) {
            return ids[i];
        }

        public long bytes() {
            return bytes;
        }

        /** The code of the refusal, or null if every message was staged. */
        public ErrorCode refusalCode() {
            return refusalCode;
        }

        public String refusal() {
            return refusal;
        }
    }

    private final BrokerQueue queue;
    private final QueueStore store;
    private final Backlog backlog;
    private final IdSet tracked;
    private final DeliveryOrder order;
    private final ProducerRegistry producers;
    private final Effects effects;
    private final PendingConfirms confirms;
    private final QueuePublishers publishers;
    /** Ids of the pending messages (T2), shared with the {@link DeliveryOrder}, which skips them. */
    private final IdSet pending;
    /** Pending messages: in the store's unacknowledged count but not visible. Written on the executor, read anywhere. */
    private volatile long stagedMessages;
    /** Bytes of the pending messages. */
    private long stagedBytes;
    /** The deliveries transactions hold (T1). */
    private final HeldDeliveries holds;
    /** Staged records found at open, until recovery resolved them (T4); null after. */
    private StagedAtOpen found;
    /**
     * Set by the delete once the queue's files are gone (T6). Closed is not gone: a delete closes the queue, waits
     * (X5 of the coordinator) and only then deletes its files, and a crash in between brings the queue back whole.
     * Written on the deleting thread, read anywhere.
     */
    private volatile boolean filesDeleted;
    /** Completed with {@link #filesDeleted}: what waits for this queue's acknowledgements waits for this once it is closed. */
    private final CompletableFuture<Void> filesGone = new CompletableFuture<>();

    QueueTransactions(BrokerQueue queue, QueueStore store, Backlog backlog, IdSet tracked, DeliveryOrder order, IdSet pending,
                      StagedAtOpen found, ProducerRegistry producers, PendingConfirms confirms, QueuePublishers publishers,
                      Effects effects) {
        this.queue = queue;
        this.store = store;
        this.backlog = backlog;
        this.tracked = tracked;
        this.order = order;
        this.pending = pending;
        this.found = found;
        this.producers = producers;
        this.effects = effects;
        this.confirms = confirms;
        this.publishers = publishers;
        this.holds = new HeldDeliveries(queue, store, backlog, tracked, order);
        found.forEach((transaction, ids, sizes, count, bytes) -> {
            for (int i = 0; i < count; i++) {
                pending.add(ids[i]);
            }
            stagedMessages += count;
            stagedBytes += bytes;
        });
        found.commitRecords().forEach((transaction, record) -> { // T5: pending until finished, no message's bytes
            pending.add(record.id());
            stagedMessages++;
            backlog.removed(record.bytes());
        });
    }

    // ------------------------------------------------------------------ acknowledgements (T1)

    /**
     * TX_ACK: takes the deliveries of {@code ranges} that are out with the consumer off it and holds
     * them ({@link HeldDeliveries#hold}, which has the rules). A range with none outstanding is the held set's
     * {@link HeldAcks#problem()}.
     */
    CompletableFuture<HeldAcks> hold(Supplier<ConsumerSession> consumer, List<IdRange> ranges) {
        return on(() -> holds.hold(consumer.get(), ranges));
    }

    /**
     * A cluster node applies a replicated acknowledgement of {@code id} (rule R13 of docs/replication.md: a committed
     * transaction's entry, on the leader whose transaction held it): no longer held; the caller acknowledges it. On the
     * executor.
     */
    void ackedByLog(long id, int bytes) {
        holds.ackedByLog(id, bytes);
    }

    /** Rollback: what {@code acks} holds goes back to the front of the queue, in id order; its next delivery counts one more. */
    public CompletableFuture<Void> release(HeldAcks acks) {
        return on(() -> {
            if (queue.isClosed()) {
                return null;
            }
            int count = holds.release(acks);
            if (count > 0) {
                effects.requeued(count);
            }
            return null;
        });
    }

    /**
     * Recovery of a committed transaction whose acknowledgements may not all have been applied: acknowledges each still
     * stored. A damaged record among them is discarded as every reader discards one, and the rest are applied all the
     * same: stopping there would leave the later ones to be delivered again, and the record kept till the next start. So
     * they are past one the store fails to read or acknowledge, which fails the future: the next start tries again.
     */
    public CompletableFuture<Long> ackRecovered(long[] ids) {
        return on(() -> {
            long newly = 0;
            RuntimeException failure = null;
            for (long id : ids) {
                StoredMessage m = null;
                try {
                    m = queue.readUnlessDamaged(id);
                    if (m != null) {
                        store.ack(id);
                    }
                } catch (RuntimeException e) {
                    failure = failure == null ? e : failure;
                    if (m == null || !store.isAcked(id)) { // an ack state that cannot be written acknowledges in memory
                        continue;
                    }
                }
                if (m != null) {
                    backlog.removed(m.headersLength() + m.payloadLength());
                    newly++;
                }
            }
            if (newly > 0) {
                effects.acked(newly);
            } else if (backlog.discardsUnseen(store.discardedMessageBytes())) { // a damaged record's bytes leave with it
                effects.backlogChanged();
            }
            if (failure != null) {
                throw failure;
            }
            return newly;
        });
    }

    // ------------------------------------------------------------------ staged messages (T2, T3)

    /**
     * TX_PUBLISH: appends the frame's messages as staged by transaction {@code transaction}, each
     * admitted by the quota as a publish would be, and releases the frame. A refused message ends the
     * staging there ({@link Staging#refusal()}); what was appended before it is in the result, for
     * the rollback to discard.
     */
    public CompletableFuture<Staging> stage(long transaction, PublishFrame frame, ProducerLink link, long windowBytes, long heldBytes) {
        return on(() -> {
            int messages = frame.messageCount();
            Staging staging;
            try {
                if (!queue.isClosed()) {
                    publishers.add(link, backlog.state(), backlog.reason()); // told the queue's FLOW changes, as a plain publisher is
                }
                staging = stageNow(transaction, frame);
            } finally {
                frame.release();
            }
            giveWindowBack(link, messages, staging.count(), windowBytes, heldBytes);
            return staging;
        });
    }

    /**
     * The frame's publish window goes back as a PUBLISH's does once confirmed: at once while the queue is free,
     * at the consumers' pace while it is slowed (C2 of {@link PendingConfirms}), behind the publishes before it.
     */
    private void giveWindowBack(ProducerLink link, int messages, int staged, long windowBytes, long heldBytes) {
        if (queue.isClosed()) { // its confirms were refused at the delete: nothing would release it
            link.publishCredit(messages, windowBytes, heldBytes);
            link.flush();
            return;
        }
        confirms.addWindow(link, messages, staged, windowBytes, heldBytes);
        effects.backlogChanged();
    }

    private Staging stageNow(long transaction, PublishFrame frame) {
        Staging staging = new Staging(frame.messageCount());
        if (queue.isClosed()) {
            staging.refuse(ErrorCode.UNKNOWN_QUEUE, "queue '" + queue.name() + "' was deleted");
            return staging;
        }
        PublishCursor cursor = frame.cursor();
        ByteBuffer source = null;
        try {
            while (cursor.next()) {
                int bytes = cursor.headersLength() + cursor.payloadLength();
                // Before the quota's drop, which would make room for a message the store refuses.
                StorageFailedException notStorable = store.appendRefusal();
                if (notStorable != null) {
                    throw notStorable;
                }
                String refusal = backlog.refusal(store.unackedMessages(), bytes, queue::dropOldest);
                if (refusal != null) {
                    staging.refuse(ErrorCode.QUEUE_BLOCKED, refusal);
                    break;
                }
                if (source == null) {
                    source = cursor.nioBuffer();
                }
                // Counted pending before the store counts it, so a concurrent message count never shows it.
                stagedMessages++;
                long id;
                try {
                    id = store.appendStaged(transaction, source, cursor.headersOffset(), cursor.headersLength(),
                            cursor.payloadOffset(), cursor.payloadLength());
                } catch (RuntimeException e) {
                    stagedMessages--;
                    throw e;
                }
                producers.appended(id);
                pending.add(id);
                stagedBytes += bytes;
                backlog.added(bytes);
                staging.add(id, bytes);
            }
        } catch (RuntimeException e) {
            ErrorCode code = ErrorCodes.of(e);
            if (code == ErrorCode.INTERNAL_ERROR) { // as a publish's: the cause in the log, not on the wire
                LOG.error("Queue '{}': storing a message a transaction published failed.", queue.name(), e);
                staging.refuse(code, "the broker could not store the message; see the broker log");
            } else {
                staging.refuse(code, e.getMessage());
            }
        }
        if (staging.count() > 0) {
            effects.backlogChanged();
        }
        return staging;
    }

    /**
     * T5: appends the commit record of transaction {@code transaction} ({@code record}, the coordinator's
     * encoding) after the messages it staged here, pending. Completes with its id, or -1 if the queue was
     * deleted or the record is larger than the queue takes (the coordinator writes it to its log then).
     * Fails if the store refused it (a full disk, a failed queue).
     */
    public CompletableFuture<Long> writeCommitRecord(long transaction, ByteBuffer record) {
        return on(() -> {
            if (queue.isClosed()) {
                return -1L;
            }
            stagedMessages++; // counted pending before the store counts it, as a staged message is
            long id;
            try {
                id = store.appendStagedCommitRecord(transaction, record);
            } catch (MessageTooLargeException e) {
                stagedMessages--;
                return -1L;
            } catch (RuntimeException e) {
                stagedMessages--;
                throw e;
            }
            producers.appended(id);
            pending.add(id);
            return id;
        });
    }

    /** A future completed once commit record {@code id} written here is durable; fails if the queue's storage failed. Any thread. */
    public CompletableFuture<Long> whenCommitRecordDurable(long id) {
        return store.whenDurable(id);
    }

    /**
     * T5: the commit record {@code id} is no longer needed (X3 of the coordinator): acknowledged. A queue
     * deleted meanwhile took it along. An ack a failed ack state takes in memory only ({@link AckBatch#ack}) ends its
     * pending all the same, and fails the future: the next start finishes it again.
     */
    public CompletableFuture<Void> finishCommitRecord(long id) {
        return on(() -> {
            if (queue.isClosed() || !pending.contains(id)) {
                return null;
            }
            pending.remove(id);
            order.discarded(id);
            RuntimeException notWritten = AckBatch.ack(store, id);
            stagedMessages--;
            effects.backlogChanged();
            if (notWritten != null) {
                throw notWritten;
            }
            return null;
        });
    }

    /** A commit record found at open (T5): its transaction, its id here and its payload. */
    public record FoundCommitRecord(long transaction, long id, ByteBuffer payload) {
    }

    /**
     * Recovery (T5): the commit records found at open, read back; an unreadable one is left out, so its
     * transaction is taken as rolled back. Before {@link #recoverStaged}.
     */
    public CompletableFuture<List<FoundCommitRecord>> commitRecordsFound() {
        return on(() -> {
            List<FoundCommitRecord> result = new ArrayList<>();
            if (found == null) {
                return result;
            }
            found.commitRecords().forEach((transaction, at) -> {
                try {
                    StoredMessage m = store.read(at.id());
                    if (m != null) {
                        result.add(new FoundCommitRecord(transaction, at.id(), m.payload()));
                    }
                } catch (RuntimeException e) {
                    LOG.error("Queue '{}': the commit record {} of transaction {} cannot be read ({}); the transaction is "
                            + "taken as rolled back.", queue.name(), at.id(), transaction, e.getMessage());
                }
            });
            return result;
        });
    }

    /**
     * Recovery (X4 of the coordinator): the highest transaction number among the records found staged at open (T4,
     * T5), committed or not, or -1 if none. Before {@link #recoverStaged}.
     */
    public CompletableFuture<Long> highestTransactionFound() {
        return on(() -> found == null ? -1L : found.highestTransaction());
    }

    /**
     * A future completed once record {@code lastId} (and so every staged record before it) is durable;
     * completed normally, too, if the queue's files were deleted meanwhile, since its part of a commit went
     * with them. A queue only closed for its delete is not gone (T6): its storage's failure fails the future,
     * or a crash before the files go would bring the queue back without the commit's messages. Any thread.
     */
    public CompletableFuture<Long> whenStagedDurable(long lastId) {
        return store.whenDurable(lastId).handle((id, failed) -> {
            if (failed != null && !filesDeleted) {
                throw failed instanceof CompletionException c ? c : new CompletionException(failed);
            }
            return lastId;
        });
    }

    /**
     * A commit's part here, once its commit record is durable (T3): its staged messages ({@code count}
     * of {@code staged}, of {@code stagedBytes}) become visible, and what {@code acks} hold is
     * acknowledged. Fails if the store refused the acknowledgements.
     */
    public CompletableFuture<Void> commit(long[] staged, int count, long stagedBytes, List<HeldAcks> acks) {
        return on(() -> {
            if (queue.isClosed()) {
                // T6: closed for its delete, its files still there. Nothing is delivered any more, but a crash now
                // brings the queue back, and this commit's record may be finished by then (its published messages
                // consumed): so its acknowledgements are stored, or its messages would come back beside what it
                // published. Its staged messages need nothing: their record stays until the files are gone.
                if (!filesDeleted) {
                    commitHeld(acks, false);
                }
                return null;
            }
            int visible = 0;
            for (int i = 0; i < count; i++) {
                long id = staged[i];
                if (pending.contains(id)) {
                    pending.remove(id);
                    order.madeVisible(id);
                    visible++;
                }
            }
            stagedMessages -= visible;
            this.stagedBytes = Math.max(0, this.stagedBytes - stagedBytes); // the bytes stay in the backlog: a stored message's
            if (visible > 0) {
                effects.visible(visible);
            }
            commitHeld(acks, true);
            return null;
        });
    }

    /** The held deliveries of {@code list} acknowledged in the store; {@code serving}: the queue is open, told of it. */
    private void commitHeld(List<HeldAcks> list, boolean serving) {
        int count = holds.acknowledge(list);
        if (count > 0 && serving) {
            effects.acked(count);
        }
    }

    /** Rollback (T3): the {@code count} staged messages of {@code staged}, of {@code bytes}, are acknowledged and leave the backlog. */
    public CompletableFuture<Void> discard(long[] staged, int count, long bytes) {
        return on(() -> {
            discardNow(staged, count, bytes);
            return null;
        });
    }

    private void discardNow(long[] staged, int count, long bytes) {
        if (queue.isClosed()) {
            return;
        }
        long[] ids = new long[count];
        int discarded = 0;
        for (int i = 0; i < count; i++) {
            if (pending.contains(staged[i])) {
                ids[discarded++] = staged[i];
            }
        }
        if (discarded == 0) {
            return;
        }
        AckBatch.ackAll(store, ids, discarded); // first: a store that takes none leaves them pending, never delivered
        for (int i = 0; i < discarded; i++) {
            pending.remove(ids[i]);
            order.discarded(ids[i]);
        }
        stagedMessages -= discarded;
        stagedBytes = Math.max(0, stagedBytes - bytes);
        backlog.removed(bytes);
        effects.backlogChanged();
    }

    /** A staging that is no part of its transaction (it ended, or the TX_PUBLISH came after its TX_COMMIT): discarded. */
    public CompletableFuture<Void> discard(Staging staging) {
        return discard(staging.ids, staging.count, staging.bytes);
    }

    /**
     * Recovery (T4): the staged records found at open become visible if their transaction {@code committed} accepts
     * it and its commit record names them ({@code named}, of this queue's ids); the others are discarded. Completes
     * with the number discarded.
     *
     * <p>Rule "named, not numbered": a record carrying a committed transaction's number that its commit record does
     * not name is no part of that commit: a TX_PUBLISH that came after the TX_COMMIT was staged, and a crash came
     * before its discard. Its client was told it was not stored.
     */
    public CompletableFuture<Long> recoverStaged(LongPredicate committed, LongPredicate named) {
        return on(() -> {
            StagedAtOpen recovered = found;
            found = null;
            long[] discarded = {0};
            if (recovered == null) {
                return 0L;
            }
            recovered.forEach((transaction, ids, sizes, count, bytes) -> {
                if (!committed.test(transaction)) {
                    discardNow(ids, count, bytes);
                    discarded[0] += count;
                    return;
                }
                long[] notNamed = new long[0];
                int notNamedCount = 0;
                long notNamedBytes = 0;
                for (int i = 0; i < count; i++) {
                    if (named.test(ids[i])) {
                        pending.remove(ids[i]);
                        stagedMessages--;
                        stagedBytes = Math.max(0, stagedBytes - sizes[i]);
                    } else {
                        if (notNamedCount == notNamed.length) {
                            notNamed = Arrays.copyOf(notNamed, Math.max(4, notNamedCount * 2));
                        }
                        notNamed[notNamedCount++] = ids[i];
                        notNamedBytes += sizes[i];
                    }
                }
                if (notNamedCount > 0) {
                    LOG.warn("Queue '{}': {} staged messages of committed transaction {} are not named by its commit record "
                            + "(a TX_PUBLISH after its TX_COMMIT, answered as not stored); discarded.",
                            queue.name(), notNamedCount, transaction);
                    discardNow(notNamed, notNamedCount, notNamedBytes);
                    discarded[0] += notNamedCount;
                }
            });
            recovered.commitRecords().forEach((transaction, at) -> { // T5: a committed one stays pending until finished
                if (!committed.test(transaction)) {
                    discardNow(new long[] {at.id()}, 1, 0); // its bytes left the backlog at open
                }
            });
            effects.visible(0);
            return discarded[0];
        });
    }

    /**
     * An id below which every message here is acknowledged: the oldest unacknowledged message's, or
     * {@link Long#MAX_VALUE} if there is none or the queue's files are deleted (T6). What a commit record
     * waits for before it is finished (X3). Any thread (the store is thread-safe).
     */
    public long acknowledgedBelow() {
        if (filesDeleted) {
            return Long.MAX_VALUE;
        }
        try {
            long oldest = store.oldestUnacked(x -> false, 0);
            return oldest < 0 ? Long.MAX_VALUE : oldest;
        } catch (StorageException e) { // closed by the delete just now, or failed: asked again at the next sweep
            return filesDeleted ? Long.MAX_VALUE : Long.MIN_VALUE;
        }
    }

    /** True if message {@code id} is acknowledged here, or the queue's files are deleted (T6). Any thread. */
    public boolean isAcknowledged(long id) {
        if (filesDeleted) {
            return true;
        }
        try {
            return store.isAcked(id);
        } catch (StorageException e) {
            return filesDeleted;
        }
    }

    /**
     * T6: the delete has removed the queue's files; what they held is gone across a restart too. Called on the
     * deleting thread once the store's delete returned.
     */
    void filesDeleted() {
        filesDeleted = true;
        filesGone.complete(null);
    }

    /** Which incarnation of its name this queue is (X6 of the coordinator: a commit record's part names it). Any thread. */
    public QueueIncarnation incarnation() {
        return store.incarnation();
    }

    /**
     * A future completed once the store's acknowledgements so far are durable, at the ack journal's next
     * force: what waits on it (a commit record's finish, X3) only has to follow, so it asks for no force
     * of its own. A queue closed for its delete (its store closed, the future refused) completes it once its
     * files are deleted, since its acknowledgements went with them (T6: not before, a crash until then brings it
     * back); only a failure of its storage fails it. Any thread.
     */
    public CompletableFuture<Void> whenAcksDurable() {
        return store.whenAcksDurable(false).exceptionallyCompose(failed -> {
            if (filesDeleted || queue.isClosed() && !(ErrorCodes.unwrap(failed) instanceof StorageFailedException)) {
                return filesGone;
            }
            return CompletableFuture.failedFuture(failed);
        });
    }

    // ------------------------------------------------------------------ for the queue

    /** Pending messages (T2), which the message count clients see leaves out. Any thread. */
    long stagedMessages() {
        return stagedMessages;
    }

    boolean isHeld(long id) {
        return holds.contains(id);
    }

    boolean isPending(long id) {
        return pending.contains(id);
    }

    int pendingCount() {
        return pending.size();
    }

    /** Bytes of the deliveries held and of the messages pending: what a purge leaves in the backlog besides the consumers'. */
    long reservedBytes() {
        return holds.bytes() + stagedBytes;
    }

    /** Hands {@code action} the id of every delivery held (T1) and every message pending (T2): what a purge leaves. */
    void forEachReserved(LongConsumer action) {
        holds.forEach(action);
        pending.forEach(action);
    }

    private <T> CompletableFuture<T> on(Supplier<T> work) {
        return CompletableFuture.supplyAsync(work, queue.executor());
    }
}
