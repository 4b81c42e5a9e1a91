package io.sluice.broker.cluster;

import io.netty.util.ReferenceCountUtil;
import io.sluice.broker.error.ErrorCodes;
import io.sluice.broker.queue.ApplyHalt;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.ProducerLink;
import io.sluice.broker.queue.ProducerRegistry;
import io.sluice.broker.queue.QueueManager;
import io.sluice.broker.txn.CrashPoint;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.DeleteQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.ProducerIds;
import io.sluice.protocol.ProducerInitFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.dedup.ProducerEpochsExhaustedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;

/**
 * Applies one committed {@link ShardEntry} to this node's queues, the same way on every node (rule R2 of
 * docs/replication.md: same entries, same order, same outcome), and answers the client of an entry this
 * node submitted ({@link Submissions}).
 *
 * <ul>
 *   <li>DECLARE_QUEUE: {@link QueueManager#declareCommitted} on the calling thread, so the queue exists before the
 *       next entry is applied; its failures (settings differ, name invalid) are the same on every node.
 *       {@code limits.max-queues} is the leader's check before it submits ({@link LeaderQueueLimit}): against
 *       this node's catalog, a replay, which finds later deletes applied already, would decide otherwise.</li>
 *   <li>PUBLISH: {@link BrokerQueue#applyReplicated}: stored with no quota check, deduplicated by the
 *       producer table, each message under the entry's position, so that a restart skips what the queue holds (rule
 *       R4a); the submitting node's client gets its CONFIRM once its store has it durable.</li>
 *   <li>ACK: {@link BrokerQueue#applyReplicatedAcks}; a consumer's acks, or the ids a purge removed on the
 *       leader (rule R7), whose submitter answers the purge once this is applied.</li>
 *   <li>DELETE_QUEUE: {@link QueueManager#delete} on the declare thread, waited for (rule R7).</li>
 *   <li>a dead-letter (rule R8): the leader's copy stored in the dead-letter queue, then the original acknowledged.</li>
 *   <li>deliveries (rule R10): the leader's delivery counts recorded in the queue's store, where they are higher.</li>
 * </ul>
 *
 * Each returned future completes once the queue's executor has done the work (so a snapshot taken after it
 * covers it), and normally even where this node's store refused part of it: Ratis answers the submitter of an entry
 * whose future failed with a StateMachineException, which {@link ClusterNode} cannot tell from Raft refusing the entry.
 *
 * <p>Rule R2, "A node that cannot apply a committed entry stops": a failure whose outcome every node meets alike (a
 * queue deleted by an earlier entry, a declare's settings) is the entry's outcome here as everywhere; one of this node's
 * own (its store refusing an append, a force, a checkpoint, a queue's files) stops this node from applying the log
 * ({@link ApplyHalt}), never skips the entry: on the state machine thread by throwing {@link EntryNotApplied}, on a
 * queue's executor through {@link ApplyHalt#failed}. Threads: the shard's state machine thread.
 */
final class ShardApplier {
    private static final Logger LOG = LoggerFactory.getLogger(ShardApplier.class);

    private final QueueManager queues;
    private final Submissions submissions;
    private final int nodeId;
    /** The cluster's entry level, which level entries raise; an entry above what this node supports stops the applier. */
    private final FinalizedEntryLevel level;
    /** Whether this node still applies the log: an entry it cannot apply here stops it (rule R2). */
    private final ApplyHalt halt;
    /** The settings every node must share, as the cluster recorded them; a node whose own differ stops (rule R2). */
    private final ClusterSettings settings;

    ShardApplier(QueueManager queues, Submissions submissions, int nodeId, FinalizedEntryLevel level, ClusterSettings settings) {
        this.level = level;
        this.settings = settings;
        this.queues = queues;
        this.submissions = submissions;
        this.nodeId = nodeId;
        this.halt = queues.applyHalt();
    }

    /**
     * Rule R12: the level of a snapshot installed through {@code index} (0: none), as if its level entry were applied.
     *
     * @throws EntryLevels.EntryTooNew if this node's broker does not support it
     */
    void installedLevel(int installed, long index) {
        if (installed > 0) {
            level.apply(installed, index);
        }
    }

    /**
     * Rule R2: the cluster's settings a snapshot through {@code index} carried (null: none recorded then), as if their
     * entry were applied.
     *
     * @throws ClusterSettings.Mismatch if this node's own differ
     */
    void installedSettings(ClusterSettings.Values installed, long index) {
        settings.installed(installed, index);
    }

    /**
     * Rules R12 and R2 before a snapshot through {@code index} is swapped in: its entry level ({@code installedLevel}, 0:
     * none) and the cluster's settings it records ({@code installedSettings}, null: none) must be ones this node can apply
     * the log with. Changes nothing, so a node that refuses keeps its store as it was.
     *
     * @throws EntryLevels.EntryTooNew      if this node's broker does not support the level
     * @throws ClusterSettings.Mismatch if this node's own settings differ from the cluster's
     */
    void checkSnapshot(int installedLevel, ClusterSettings.Values installedSettings, long index) {
        level.checkSnapshot(installedLevel, index);
        settings.checkSnapshot(installedSettings, index);
    }

    /** The entry level this node's broker supports. */
    int supportedLevel() {
        return level.supported();
    }

    /**
     * Applies the log entry at {@code index}: one shard entry, or a batch of them ({@link EntryBatch}) in their order,
     * each as if it were an entry of its own (rule R2). A damaged entry of a known version is skipped and logged: every
     * node meets the same bytes, so every node skips it alike. An entry of a level this node does not support is not
     * skipped, since the nodes that support it apply it (rule R12): nothing of the log entry is applied and
     * {@link EntryLevels.EntryTooNew} is thrown, which stops the state machine.
     *
     * <p>Rule R2: nothing here depends on this node's own limits. The leader admitted the entry under its limits, so a
     * frame is read up to the entry's own length (not this node's {@code broker.max-frame-bytes}) and a message is stored
     * whatever this node's {@code storage.max-message-bytes}; a message above what this node's store can hold at all
     * stops it as R12 does ({@link EntryNotStorable}), before anything of the log entry is applied.
     */
    CompletableFuture<Void> applyLogEntry(byte[] data, long index) {
        EntryLevels.check(data, index, level.supported());
        if (EntryLevels.isLevelEntry(data)) {
            return applyLevel(data, index);
        }
        if (ClusterSettings.is(data)) {
            return applySettings(data, index);
        }
        if (TransactionEntry.is(data)) {
            return applyTransaction(data, index);
        }
        if (!EntryBatch.isBatch(data)) {
            ShardEntry entry = decode(data, index);
            if (entry == null) {
                return CompletableFuture.completedFuture(null);
            }
            checkStorable(List.of(entry), index);
            return applyDecoded(entry, index, 0);
        }
        List<byte[]> encoded;
        try {
            encoded = EntryBatch.decode(data);
        } catch (RuntimeException e) {
            LOG.error("Skipping log entry {}, a batch this broker cannot read: {}", index, e.getMessage());
            return CompletableFuture.completedFuture(null);
        }
        List<ShardEntry> entries = new java.util.ArrayList<>(encoded.size());
        for (byte[] one : encoded) {
            entries.add(decode(one, index)); // null: skipped alike on every node, the others applied
        }
        checkStorable(entries, index);
        CompletableFuture<?>[] applied = new CompletableFuture<?>[entries.size()];
        for (int i = 0; i < applied.length; i++) {
            ShardEntry entry = entries.get(i);
            applied[i] = entry == null ? CompletableFuture.completedFuture(null) : applyDecoded(entry, index, i);
        }
        return CompletableFuture.allOf(applied);
    }

    /**
     * A committed shard entry, its frame bounded only by the entry itself; null (logged) if it is damaged, which every
     * node finds alike since every node reads the same bytes with the same bound.
     */
    private static ShardEntry decode(byte[] data, long index) {
        try {
            return ShardEntry.decode(data, data.length);
        } catch (RuntimeException e) {
            LOG.error("Skipping a shard entry of log entry {} that this broker cannot read: {}", index, e.getMessage());
            return null;
        }
    }

    /**
     * Throws {@link EntryNotStorable} (and releases the entries' frames) if a message of {@code entries} is above what this
     * node's store can hold: a PUBLISH's or a dead-letter copy's.
     */
    private void checkStorable(List<ShardEntry> entries, long index) {
        int storable = queues.store().config().storableMessageBytes();
        for (ShardEntry entry : entries) {
            int largest = entry == null ? 0 : largestMessageBytes(entry);
            if (largest > storable) {
                for (ShardEntry any : entries) {
                    if (any != null) {
                        ReferenceCountUtil.release(any.frame());
                    }
                }
                throw new EntryNotStorable(index, entry.queue(), largest, storable);
            }
        }
    }

    private static int largestMessageBytes(ShardEntry entry) {
        if (entry.deadLetter() != null) {
            return entry.deadLetter().headers().length + entry.deadLetter().payload().length;
        }
        int largest = 0;
        if (entry.frame() instanceof PublishFrame publish) {
            io.sluice.protocol.PublishCursor cursor = publish.cursor();
            while (cursor.next()) {
                largest = Math.max(largest, cursor.headersLength() + cursor.payloadLength());
            }
        }
        return largest;
    }

    /**
     * Rule R12: the cluster's entry level rises (or stays: a level entry below it changes nothing); one this node does
     * not support stops it ({@link FinalizedEntryLevel#apply}). The submitter's caller learns it is applied.
     */
    private CompletableFuture<Void> applyLevel(byte[] data, long index) {
        EntryLevels.LevelEntry entry;
        try {
            entry = EntryLevels.decodeLevelEntry(data);
        } catch (IllegalArgumentException e) {
            LOG.error("Skipping log entry {}, a level entry this broker cannot read: {}", index, e.getMessage());
            return CompletableFuture.completedFuture(null);
        }
        level.apply(entry.level(), index);
        LOG.info("Shard entry {} of node {} (log entry {}) finalizes entry level {}; this node's is now {}.", entry.originCall(),
                entry.originNode(), index, entry.level(), level.finalized());
        CompletableFuture<Void> answer = entry.originNode() == nodeId ? submissions.takeApplied(entry.originCall()) : null;
        if (answer != null) {
            answer.complete(null);
        }
        return CompletableFuture.completedFuture(null);
    }

    /**
     * Rule R2: the first settings entry records the cluster's settings; a node whose own differ stops there
     * ({@link ClusterSettings.Mismatch}), before any later entry gives its messages other ids than the other nodes'.
     */
    private CompletableFuture<Void> applySettings(byte[] data, long index) {
        ClusterSettings.Entry entry;
        try {
            entry = ClusterSettings.decode(data);
        } catch (IllegalArgumentException e) {
            LOG.error("Skipping log entry {}, a settings entry this broker cannot read: {}", index, e.getMessage());
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> answer = entry.originNode() == nodeId ? submissions.takeApplied(entry.originCall()) : null;
        try {
            settings.apply(entry.values(), index);
        } finally {
            if (answer != null) {
                answer.complete(null);
            }
        }
        LOG.info("Log entry {} records the cluster's settings: {}.", index, settings.recorded().text().trim().replace('\n', ','));
        return CompletableFuture.completedFuture(null);
    }

    private CompletableFuture<Void> applyDecoded(ShardEntry entry, long index, int place) {
        try {
            return apply(entry, index, place);
        } catch (EntryNotApplied e) {
            throw e; // this node's own failure: it stops (R2), the batch's later entries unapplied
        } catch (RuntimeException e) {
            LOG.error("Skipping a shard entry of log entry {} that this broker cannot apply: {}", index, e.getMessage());
            return CompletableFuture.completedFuture(null);
        }
    }

    /**
     * Rule R13: a committed transaction, as a whole. Each queue's messages are stored under the entry's log index and
     * their place in it ({@link TransactionEntry#firstSequence}), each once, so a replay stores none twice; its acks are
     * applied as replicated acks (rule R5: on the leader, the ids its transaction held are acknowledged as on every node).
     * A queue deleted since takes its part with it. The submitter's answer completes once every part's work is done and
     * the messages are durable here (what a CONFIRM means), exceptionally if a store refused them.
     */
    private CompletableFuture<Void> applyTransaction(byte[] data, long index) {
        TransactionEntry.Decoded entry;
        try {
            entry = TransactionEntry.decode(data);
        } catch (IllegalArgumentException e) {
            LOG.error("Skipping log entry {}, a transaction this broker cannot read: {}", index, e.getMessage());
            return CompletableFuture.completedFuture(null);
        }
        int storable = queues.store().config().storableMessageBytes();
        for (io.sluice.broker.queue.Replication.TransactionPart part : entry.parts()) {
            for (int i = 0; i < part.headers().size(); i++) {
                int bytes = part.headers().get(i).length + part.payloads().get(i).length;
                if (bytes > storable) {
                    throw new EntryNotStorable(index, part.queue(), bytes, storable);
                }
            }
        }
        CompletableFuture<Void> answer = entry.originNode() == nodeId ? submissions.takeApplied(entry.originCall()) : null;
        java.util.Map<String, Integer> placed = new java.util.HashMap<>();
        List<CompletableFuture<Void>> work = new java.util.ArrayList<>();
        List<CompletableFuture<Void>> durable = new java.util.ArrayList<>();
        for (io.sluice.broker.queue.Replication.TransactionPart part : entry.parts()) {
            BrokerQueue queue = queues.get(part.queue());
            if (queue == null) {
                LOG.warn("Transaction {} of node {} (log entry {}): queue '{}' does not exist on this node; its part went with it.",
                        entry.transaction(), entry.originNode(), index, part.queue());
                continue;
            }
            if (!part.headers().isEmpty()) {
                int before = placed.merge(part.queue(), part.headers().size(), Integer::sum) - part.headers().size();
                durable.add(stopIfNotStored(queue.applyTransactionMessages(TransactionEntry.firstSequence(index, before),
                        part.headers(), part.payloads()), queue, "storing the messages of the committed transaction at log entry "
                        + index + " in queue '" + part.queue() + "'"));
            }
            if (!part.acks().isEmpty()) {
                queue.applyReplicatedAcks(part.acks());
            }
            work.add(afterQueueWork(queue));
        }
        CompletableFuture<Void> done = CompletableFuture.allOf(work.toArray(CompletableFuture[]::new));
        if (answer != null) {
            durable.add(done);
            CompletableFuture.allOf(durable.toArray(CompletableFuture[]::new)).whenComplete((x, failure) -> {
                if (failure != null) {
                    answer.completeExceptionally(failure);
                } else {
                    answer.complete(null);
                }
            });
        }
        return done;
    }

    /**
     * Applies the entry at {@code index} of the log (a dead-letter's copy is stored under it, rule R8), the
     * {@code place}-th of its batch (0 if it is no batch's): the two are the entry's position, by which a replay tells
     * what it applied before (rules R4, R11).
     */
    CompletableFuture<Void> apply(ShardEntry entry, long index, int place) {
        boolean mine = entry.originNode() == nodeId;
        if (entry.frame() instanceof PublishFrame publish) {
            ProducerLink link = mine ? submissions.takePublish(entry.originCall()) : ReplicaLink.INSTANCE;
            return publish(entry, publish, link, position(index, place));
        } else if (entry.frame() instanceof DeclareQueueFrame declare) {
            declare(entry, declare, index, mine ? submissions.takeDeclare(entry.originCall()) : null);
        } else if (entry.deadLetter() != null) {
            return deadLetter(entry, index, entry.deadLetter(), mine ? submissions.takeApplied(entry.originCall()) : null);
        } else if (entry.deliveries() != null) {
            // On the leader that delivered them, a no-op (recorded already); after its restart, what its journal lost.
            BrokerQueue queue = queues.get(entry.queue());
            if (queue != null) {
                queue.applyReplicatedDeliveries(entry.deliveries().ids(), entry.deliveries().counts());
                return afterQueueWork(queue);
            }
        } else if (entry.frame() instanceof AckFrame ack) {
            // A purge (R7) or a drop (R9) of this node waits for its entry; a consumer's acks have no one waiting.
            CompletableFuture<Void> waiting = mine ? submissions.takeApplied(entry.originCall()) : null;
            BrokerQueue queue = queues.get(entry.queue());
            if (queue != null) {
                queue.applyReplicatedAcks(ack.messageIds());
                CompletableFuture<Void> applied = afterQueueWork(queue);
                if (waiting != null) {
                    applied.whenComplete((done, failure) -> waiting.complete(null));
                }
                return applied;
            }
            if (waiting != null) {
                waiting.complete(null); // deleted since: nothing left to purge or drop
            }
        } else if (entry.frame() instanceof ProducerInitFrame init) {
            return register(entry, init, position(index, place), mine ? submissions.takeRegistration(entry.originCall()) : null);
        } else if (entry.frame() instanceof DeleteQueueFrame) {
            delete(entry, index, mine ? submissions.takeDelete(entry.originCall()) : null);
        } else {
            ReferenceCountUtil.release(entry.frame());
            throw new IllegalArgumentException("a shard entry holds a " + entry.frame().type() + " frame, which is no state change");
        }
        return CompletableFuture.completedFuture(null);
    }

    private CompletableFuture<Void> publish(ShardEntry entry, PublishFrame publish, ProducerLink link, long position) {
        BrokerQueue queue = queues.get(entry.queue());
        if (queue == null) {
            // Only if the queue's declare failed here and not on the leader, or was never applied: nothing to store into.
            LOG.error("Shard entry {} of node {} publishes {} messages to queue '{}', which does not exist on this node.",
                    entry.originCall(), entry.originNode(), publish.messageCount(), entry.queue());
            try {
                link.refuseAll(publish, ErrorCode.UNKNOWN_QUEUE, "queue '" + entry.queue() + "' does not exist on this node");
            } finally {
                publish.release();
            }
            return CompletableFuture.completedFuture(null);
        }
        // Only what this node admitted counts here (R9); the leader's epochs decide fencing (R11).
        // Rule R4a: each message stored carries the entry's position, so a restart does not apply it again here.
        queue.applyReplicated(link, publish, link != ReplicaLink.INSTANCE, entry.epochs(), position);
        return afterQueueWork(queue);
    }

    /**
     * Rule R8: the copy goes to the dead-letter queue's executor now, behind every earlier entry's publishes to it,
     * so it gets the same id on every node; the dead-letter queue is declared first if it does not exist here,
     * as a single broker declares it (on every node alike: this entry is where), without {@code limits.max-queues}: the
     * leader counted the dead-letter queue among its queues until this entry is applied ({@link LeaderQueueLimit}). The copy is stored under the entry's
     * log index ({@link BrokerQueue#applyForwarded}), so a node replaying the log after a crash between the copy and
     * the original's ack finds it in the dead-letter queue's producer table and only acknowledges the original; one
     * that finds the original acknowledged knows the copy is stored. A source deleted since has nothing left to move.
     * A copy this node cannot store stops this node (rule R2: it is applied again after its restart) and fails
     * {@code answer} (the leader gives the message back, as for any failed move); the entry's apply still completes
     * normally.
     */
    private CompletableFuture<Void> deadLetter(ShardEntry entry, long index, ShardEntry.DeadLetterCopy copy,
                                               CompletableFuture<Void> answer) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        // What Ratis gets: the entry's work is over, whichever way it went. A failure there would reach the submitter as
        // Ratis's StateMachineException, which ClusterNode.send takes for Raft refusing the entry (it closes every client
        // with NOT_LEADER) though the entry is committed; the move's failure goes to the leader's answer alone.
        CompletableFuture<Void> over = done.handle((applied, failure) -> null);
        if (answer != null) {
            done.whenComplete((applied, failure) -> {
                if (failure != null) {
                    answer.completeExceptionally(failure);
                } else {
                    answer.complete(null);
                }
            });
        }
        BrokerQueue source = queues.get(copy.source());
        BrokerQueue deadLetters = queues.get(entry.queue());
        if (source == null || source.store().isAcked(copy.sourceId())) {
            if (answer != null && deadLetters != null) { // the leader counted the copy as uncommitted (R9)
                deadLetters.uncommittedRefused(1, copy.headers().length + copy.payload().length);
            }
            done.complete(null);
            return over;
        }
        try {
            if (deadLetters == null) {
                deadLetters = queues.declareCommitted(entry.queue(), QueueSettings.EMPTY);
            }
        } catch (RuntimeException e) {
            done.completeExceptionally(e);
            if (!sameOnEveryNode(e)) {
                throw new EntryNotApplied(index, "declaring dead-letter queue '" + entry.queue() + "'", e);
            }
            LOG.error("Shard entry {} of node {}: declaring dead-letter queue '{}' failed; message {} stays in '{}'.",
                    entry.originCall(), entry.originNode(), entry.queue(), copy.sourceId(), copy.source(), e);
            return over;
        }
        BrokerQueue target = deadLetters;
        deadLetters.applyForwarded(index, ByteBuffer.wrap(copy.headers()), ByteBuffer.wrap(copy.payload()), answer != null)
                .whenComplete((id, failure) -> {
                    if (failure != null) {
                        // Rule R2: the copy is committed; a node whose store refused it (or did not make it durable) stops.
                        stopUnlessDeleted(target, "storing the dead-letter copy of message " + copy.sourceId() + " of '"
                                + copy.source() + "' (log entry " + index + ") in '" + target.name() + "'", failure);
                        done.completeExceptionally(failure);
                        return;
                    }
                    CrashPoint.reached(CrashPoint.CLUSTER_DEAD_LETTER_COPY_DURABLE);
                    source.applyReplicatedAcks(List.of(IdRange.single(copy.sourceId())));
                    afterQueueWork(source).whenComplete((ignored, never) -> done.complete(null));
                });
        return over;
    }

    /**
     * Rule R11: every node registers the named producer in log order, so grants the same epoch; on the submitter the
     * client's connection becomes the producer's owner, on every other node none does (the epoch in the producer table
     * fences every connection there until the producer's instance registers on it, which the client does on
     * reconnecting to a new leader). No cap on owners of this node's refuses it (the leader checked the cap before it
     * submitted), and a replayed one changes nothing (rule R4): the queue's producer table holds the position of the last
     * registration it applied ({@link ProducerRegistry#registerReplicated}). It is applied once its checkpoint is written,
     * which a snapshot marker then follows; a checkpoint this node cannot write stops it (rule R2).
     */
    private CompletableFuture<Void> register(ShardEntry entry, ProducerInitFrame init, long position,
                                             Submissions.Registration waiting) {
        BrokerQueue queue = queues.get(entry.queue());
        if (queue == null) {
            if (waiting != null) {
                waiting.answer().completeExceptionally(new io.sluice.broker.error.BrokerException(ErrorCode.UNKNOWN_QUEUE,
                        "queue '" + entry.queue() + "' does not exist; declare it first"));
            }
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<ProducerRegistry.Registered> registered = queue.producerState().registerReplicated(
                waiting == null ? null : waiting.connection(), ProducerIds.forName(init.producerName()), init.epoch(), position);
        // Applied once its checkpoint is written: a marker taken before would let a restart lose the registration here.
        CompletableFuture<Void> checkpointed = registered.handle((answer, failure) -> {
            if (failure != null && !sameOnEveryNode(failure)) {
                stopUnlessDeleted(queue, "registering producer '" + init.producerName() + "' (log entry " + (position >>> 16)
                        + ") in queue '" + queue.name() + "'", failure);
            }
            return null;
        });
        if (waiting != null) {
            registered.whenComplete((answer, failure) -> {
                if (failure != null) {
                    waiting.answer().completeExceptionally(failure);
                } else {
                    waiting.answer().complete(answer);
                }
            });
        }
        return CompletableFuture.allOf(afterQueueWork(queue), checkpointed);
    }

    /** The position of a batch's {@code place}-th shard entry in the log entry {@code index}: ordered as they are applied. */
    static long position(long index, int place) {
        return index << 16 | place;
    }

    /** A declare's refusal (its name, its settings) is the same on every node; any other failure is this node's (R2). */
    private void declare(ShardEntry entry, DeclareQueueFrame declare, long index, CompletableFuture<BrokerQueue> answer) {
        try {
            BrokerQueue queue = queues.declareCommitted(declare.queue(), declare.settings());
            if (answer != null) {
                answer.complete(queue);
            }
        } catch (RuntimeException e) {
            if (answer != null) {
                answer.completeExceptionally(e);
            }
            if (!sameOnEveryNode(e)) {
                throw new EntryNotApplied(index, "declaring queue '" + declare.queue() + "' (shard entry " + entry.originCall()
                        + " of node " + entry.originNode() + ")", e);
            }
        }
    }

    /**
     * Rule R7: every node deletes the queue when it applies the entry, on the declare thread as a single
     * broker does (the state machine thread waits, so the next entry sees the queue gone).
     */
    private void delete(ShardEntry entry, long index, CompletableFuture<Boolean> answer) {
        try {
            boolean existed = queues.onDeclareThread(() -> queues.delete(entry.queue())).join();
            if (answer != null) {
                answer.complete(existed);
            }
        } catch (RuntimeException e) {
            if (answer != null) {
                answer.completeExceptionally(e);
            }
            throw new EntryNotApplied(index, "deleting queue '" + entry.queue() + "' (shard entry " + entry.originCall()
                    + " of node " + entry.originNode() + ")", ErrorCodes.unwrap(e));
        }
    }

    /**
     * A failure every node meets alike at the same entry, since it follows from the log alone: a queue's name or settings,
     * a queue deleted by an earlier entry, a table out of epochs. Anything else (the store, the disk, a checkpoint) is this
     * node's own, and stops it (rule R2).
     */
    static boolean sameOnEveryNode(Throwable failure) {
        if (ErrorCodes.unwrap(failure) instanceof ProducerEpochsExhaustedException) {
            return true;
        }
        return switch (ErrorCodes.of(failure)) {
            case INVALID_QUEUE_NAME, INVALID_QUEUE_SETTING, QUEUE_EXISTS_WITH_DIFFERENT_SETTINGS, UNKNOWN_QUEUE, INVALID_PRODUCER -> true;
            default -> false;
        };
    }

    /** {@code stored}, which stops this node if it fails, unless {@code queue} was deleted meanwhile or the node stopped already. */
    private CompletableFuture<Void> stopIfNotStored(CompletableFuture<Void> stored, BrokerQueue queue, String what) {
        return stored.whenComplete((done, failure) -> {
            if (failure != null) {
                stopUnlessDeleted(queue, what, failure);
            }
        });
    }

    private void stopUnlessDeleted(BrokerQueue queue, String what, Throwable failure) {
        if (!queue.isClosed() && !halt.halted()) {
            halt.failed(what, failure);
        }
    }

    /** Completes once what was handed to the queue's executor so far has run (it runs tasks in order). */
    private static CompletableFuture<Void> afterQueueWork(BrokerQueue queue) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        try {
            queue.executor().execute(() -> done.complete(null));
        } catch (RejectedExecutionException e) {
            done.complete(null); // the broker is stopping: the queue's work stops with it
        }
        return done;
    }
}
