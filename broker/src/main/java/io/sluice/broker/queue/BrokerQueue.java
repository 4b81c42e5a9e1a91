package io.sluice.broker.queue;

import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.FlowState;
import io.sluice.broker.error.BrokerException;
import io.sluice.broker.log.Printable;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.storage.CorruptRecordException;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoredMessage;
import io.sluice.storage.dedup.ProducerTable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;
import java.util.function.LongFunction;
import java.util.function.LongPredicate;

/**
 * A queue as the broker serves it, and the owner of its state: publishes into its {@link QueueStore} and
 * confirms once stored (its {@link PublishPath} does both), delivers to competing consumers within their
 * credit (the {@link Dispatcher} chooses and builds, this class says when), tracks each delivery until it
 * is acknowledged, and redelivers or dead-letters what is not.
 *
 * <p>Threads: all state is confined to one executor (a Netty event loop chosen when the queue is
 * opened); connections hand frames over with one task per frame, not per message. The storage
 * flusher reports durability through a task on the same executor.
 *
 * <p>Rules:
 * <ul>
 *   <li>D1 a consumer never has more deliveries outstanding than the credit it granted;</li>
 *   <li>D2 one consumer receives messages in store order (redeliveries go first);</li>
 *   <li>D3 a delivery's count is recorded in the store before it is sent, so counts only grow,
 *       across restarts too; a message about to exceed {@code maxDeliveries} goes to the
 *       dead-letter queue instead;</li>
 *   <li>D4 messages of a consumer that leaves, and deliveries past the ack timeout, go back to the
 *       front of the queue; a NACK-requeued message waits out a delay that doubles with each
 *       delivery, without holding the consumer's credit.</li>
 * </ul>
 */
public final class BrokerQueue {
    private static final Logger LOG = LoggerFactory.getLogger(BrokerQueue.class);

    private final String name;
    private final QueueStore store;
    private final EventExecutor executor;
    private final QueueManager manager;
    private volatile QueueOptions options;

    private final List<ConsumerSession> consumers = new ArrayList<>();
    /** Every message delivered and unacknowledged, or waiting for redelivery. */
    private final IdSet tracked = new IdSet();
    /** Redeliveries due now, then the store through its reader (D2, D4, D5). */
    private final DeliveryOrder order;
    private final PendingConfirms pendingConfirms;
    /** Connections that published here: told of flow state changes. */
    private final QueuePublishers publishers;
    /** The byte backlog, the quota state, the disk block and the slowed producers' tokens: one owner. */
    private final Backlog backlog;
    private final DropOldest dropOldest;
    /** Stores PUBLISH frames and forwarded copies, releases confirms, tells publishers of flow changes. */
    private final PublishPath publishPath;
    private boolean dispatchScheduled;
    /** Chooses consumers, takes from the order, builds the DELIVER frames (D1..D3). */
    private final Dispatcher dispatcher;
    /** The acknowledged deliveries of the ACK frame being applied. */
    private final AckBatch acks;
    /** On a cluster leader, what its purges picked and drop-oldest dropped and it has not applied yet (rules R7, R9). */
    private final LeaderHold leaderHold = new LeaderHold();
    /** What the queue does after acks, requeues or commits made elsewhere (its transactions, a replicated ack). */
    private final TransactionEffects transactionEffects = new TransactionEffects();
    private ScheduledFuture<?> ackTimeoutTask;
    private final DeadLetterMoves deadLetters;
    /** Applies the consumers' ACK and NACK frames. */
    private final Settlements settlements;
    /** What a cluster leader gives back when its entries may never commit (R5, R7, R9). */
    private final LeaderGiveBacks giveBacks;
    /** What of each producer is stored, to store a resend once (with deduplication off, only the transactions'). */
    private final ProducerRegistry producers;
    private final QueueProducerState producerState;
    private long redelivered;
    /** Message counters for metrics: written only on the executor, read through {@link #snapshot()}. */
    private long publishedMessages;
    private long deliveredMessages;
    private long ackedMessages;
    /** Dispatch passes run: what a frame that changes nothing must not cost (written on the executor; read by tests). */
    private long dispatchPasses;
    /** Written on the executor; read elsewhere too (QueueTransactions' thread-safe methods). */
    private volatile boolean closed;
    /** The transactions' held deliveries and pending messages here. */
    private final QueueTransactions transactions;
    /** Reads a message by id: the store's read, unless a test put a fault in its place ({@link #readsThrough}). */
    private LongFunction<StoredMessage> readById;

    BrokerQueue(String name, QueueStore store, EventExecutor executor, QueueManager manager, QueueOptions options,
                int publishAllowance) {
        this.name = name;
        this.store = store;
        this.readById = store::read;
        this.pendingConfirms = new PendingConfirms(store::demandDurable);
        this.executor = executor;
        this.manager = manager;
        this.options = options;
        this.publishers = new QueuePublishers(name);
        IdSet pending = new IdSet();
        this.order = new DeliveryOrder(store, tracked, pending, leaderHold, executor, this::scheduleDispatch);
        this.dispatcher = new Dispatcher(name, order, tracked, new DeliveryFrames(name, store, (ids, counts, n) -> {
            Replication replication = manager.replication(); // rule R10 of docs/replication.md: replicated, best effort
            if (replication != null) {
                replication.delivered(this, ids, counts, n);
            }
        }), this::deadLetter);
        StagedAtOpen staged = new StagedAtOpen();
        long discardedBefore = store.discardedMessageBytes(); // not in the count that follows
        this.backlog = new Backlog(name, options.quota(), publishAllowance, manager.publishAllowanceBytes(), store.unackedMessages(), store.unackedMessageBytes(staged));
        backlog.storeDiscardedBeforeTheCount(discardedBefore);
        this.acks = new AckBatch(store, backlog, tracked);
        this.producers = manager.openProducers(name, store, executor);
        this.pendingConfirms.tellProducers(producers.table());
        this.producerState = new QueueProducerState(this, producers, executor);
        this.publishPath = new PublishPath(this, store, order, backlog, producers, publishers, pendingConfirms, this::published);
        this.transactions = new QueueTransactions(this, store, backlog, tracked, order, pending, staged, producers,
                pendingConfirms, publishers, transactionEffects);
        this.dropOldest = new DropOldest(this, store, tracked, transactions, backlog, manager,
                this::deadLetterDropped, order, leaderHold, this::outWithAConsumerNow);
        this.deadLetters = new DeadLetterMoves(this, manager, store, tracked, order, backlog, executor, () -> closed,
                () -> acknowledged(1), this::scheduleDispatch);
        this.settlements = new Settlements(this, store, manager, tracked, order, acks, transactions, deadLetters,
                this::readUnlessDamaged, transactionEffects::acked, this::scheduleDispatch);
        this.giveBacks = new LeaderGiveBacks(name, tracked, order, backlog, acks, leaderHold, publishPath,
                store::isAcked, count -> redelivered += count, this::scheduleDispatch);
        store.durabilityListener(durable -> {
            if (!executor.isShuttingDown()) {
                executor.execute(publishPath::releaseConfirms);
            }
        });
        long period = Math.max(50, Math.min(options.ackTimeoutMs() / 4, 1000));
        ackTimeoutTask = executor.scheduleAtFixedRate(this::expireDeliveries, period, period, TimeUnit.MILLISECONDS);
    }

    public String name() {
        return name;
    }

    public QueueStore store() {
        return store;
    }

    public EventExecutor executor() {
        return executor;
    }

    public QueueTransactions transactions() {
        return transactions;
    }

    public QueueOptions options() {
        return options;
    }

    // ------------------------------------------------------------------ publish

    /** Stores every message of the frame, then confirms (now, or when durable). Releases the frame. */
    public void publish(ProducerLink connection, PublishFrame frame) {
        publishPath.publish(connection, frame);
    }

    /**
     * A cluster node applies a committed PUBLISH entry (docs/replication.md): as {@link #publish}, with no quota
     * check, as every node must store what the log holds (R2; the leader checked before submitting, R9). The
     * producer table still decides duplicates, the same on every node. {@code position}: the entry's in the log (its
     * index and place in a batch), which each message stored from it carries, so that a restart does not apply it
     * again to this queue (R4a).
     */
    public void applyReplicated(ProducerLink connection, PublishFrame frame, boolean submittedHere, ProducerEpochs epochs,
                                long position) {
        publishPath.applyReplicated(connection, frame, submittedHere, epochs, position);
    }

    /** Rule R10 of docs/replication.md: the leader delivered {@code ids[i]} for the {@code counts[i]}-th time. */
    public void applyReplicatedDeliveries(long[] ids, int[] counts) {
        executor.execute(applyHalt().guard(this, "recording replicated deliveries", () -> acks.recordReplicatedDeliveries(ids, counts)));
    }

    /** Whether this cluster node still applies the log: a committed entry this queue cannot apply stops it (rule R2). */
    ApplyHalt applyHalt() {
        return manager.applyHalt();
    }

    /** Rule R9 of docs/replication.md: the leader's quota check before it submits a PUBLISH ({@link LeaderAdmission}). */
    public void admit(ProducerLink link, PublishFrame frame, long maxUncommittedBytes,
                      java.util.function.BiConsumer<PublishFrame, ProducerEpochs> submit) {
        publishPath.admit(link, frame, maxUncommittedBytes, submit);
    }

    /** Rules R8 and R9: the leader's quota check of a dead-letter copy ({@link LeaderAdmission#admitCopy}); fails with the refusal. */
    public CompletableFuture<Void> admitCopy(int messageBytes, long maxUncommittedBytes) {
        return publishPath.admitCopy(messageBytes, maxUncommittedBytes);
    }

    /**
     * Rules R9 and R13: the leader's quota check of a cluster transaction's TX_PUBLISH of messages of {@code sizes} bytes
     * (headers plus payload); completes with null if admitted (counted as uncommitted until {@link #transactionEnded}),
     * else the refusal. Any thread.
     */
    public CompletableFuture<String> admitTransactional(int[] sizes, long maxUncommittedBytes) {
        return publishPath.admitTransactional(sizes, maxUncommittedBytes);
    }

    /** Rule R13: the transaction {@link #admitTransactional} admitted messages for ended (committed, rolled back or refused). Any thread. */
    public void transactionEnded(long messages, long messageBytes) {
        publishPath.transactionEnded(messages, messageBytes);
    }

    /** Rule R9: Raft refused a frame {@link #admit} counted. Any thread. */
    public void uncommittedRefused(long messages, long messageBytes) {
        publishPath.notCommitted(messages, messageBytes);
    }

    /** The queue's producer state, for named producers and the shutdown's last checkpoint. */
    public QueueProducerState producerState() {
        return producerState;
    }

    /** The {@code drop-oldest} policy's discard (replicated on a cluster and held until applied, rule R9 of docs/replication.md). */
    boolean dropOldest() {
        return dropOldest.dropOne();
    }

    /** The broker-wide disk guard changed ({@link QueueManager#diskBlocked}): blocks or frees this queue's producers as it now says. */
    void diskGuardChanged() {
        publishPath.diskGuardChanged(manager::diskBlockedReason);
    }

    /** The flow state producers were last told. */
    public FlowState flowState() {
        return backlog.state();
    }

    /**
     * Graceful shutdown gave up waiting: every publish still unconfirmed is refused with
     * NOT_CONFIRMED_SHUTDOWN, so its producer knows to publish it again (it may be stored twice).
     */
    public void refuseUnconfirmedAtShutdown() {
        publishPath.refuseUnconfirmedAtShutdown();
    }

    /** Publishes still waiting for their sync; for graceful shutdown. */
    public int pendingConfirms() {
        return pendingConfirms.size();
    }

    // ------------------------------------------------------------------ consumers

    /** Adds a consumer. Runs on the queue's executor; returns the session for later frames. */
    ConsumerSession subscribe(ConsumerLink connection, int tag, long initialCredit, ConnectionCredit account) {
        if (closed) {
            // Found by the connection before another deleted it: a reader opened now would never be closed (the
            // delete closed the last), and credit granted never given back.
            throw deleted();
        }
        order.openReader(); // first: a store that throws here leaves no consumer behind, holding credit
        ConsumerSession session = new ConsumerSession(connection, tag, account.grant(initialCredit), account);
        consumers.add(session);
        scheduleDispatch();
        return session;
    }

    void credit(ConsumerSession session, long wanted) {
        if (closed) {
            return; // deleted: nothing to deliver, and a grant would never be settled (DeletedQueueConsumerTest)
        }
        long granted = session.account.grant(wanted);
        if (granted < wanted) {
            session.connection.error(ErrorCode.RESOURCE_LIMIT, session.account.refusal(session.tag, wanted, granted));
            session.connection.flush();
        }
        if (granted > 0) { // a credit refused whole changes nothing to deliver: no pass for it
            session.credit += granted;
            scheduleDispatch();
        }
    }

    /** Acknowledges the ids of the ranges that are outstanding on this session, or were taken back from it (D5). */
    void ack(ConsumerSession session, AckFrame frame) {
        if (closed) {
            return; // deleted: the close settled the deliveries, and the store is gone
        }
        settlements.ack(session, frame);
    }

    /**
     * A cluster node applies replicated acks (docs/replication.md): drops each message not yet acked here,
     * except one out with a consumer of this node, which that consumer settles (an at-least-once redelivery
     * at worst). A message whose read fails (the store failed) is left as it was, the entry's others applied and
     * counted, and then this node stops applying the log (rule R2, {@link Settlements#logAcksApplied}). Acks the
     * store takes in memory only (its ack state failed) are applied and counted as the store's figures say.
     */
    public void applyReplicatedAcks(List<IdRange> ranges) {
        executor.execute(applyHalt().guard(this, "acknowledging replicated acks", () -> {
            // A drop this node holds (R9) is off the backlog since it was chosen: only the store's ack waited for this entry.
            long[] drops = leaderHold.applied(ranges);
            if (drops.length > 0) {
                AckBatch.ackAll(store, drops, drops.length); // a failed ack state takes them in memory: dropped all the same
                backlog.dropsApplied(drops.length);
                dropOldest.dropsApplied(drops.length);
            }
            // A purge's ids this node held are untracked, so they are acknowledged here as on every node (R7).
            transactionEffects.acked(acks.applyReplicated(ranges, settlements::ackedByLog, this::settledHere));
            settlements.logAcksApplied();
        }));
    }

    /**
     * Rule R5 of docs/replication.md: this node stopped leading, so the acks its consumers sent and it has not applied
     * may never commit. Their messages are due again (with their delivery counts), as the new leader delivers them;
     * if their entry commits after all, applying it acknowledges them. Resends waiting for messages it submitted are
     * answered now ({@link InFlightPublishes}).
     */
    public void leadershipLost() {
        executor.execute(giveBacks::leadershipLost);
    }

    /**
     * Rule R7 of docs/replication.md: the entries of a purge that held {@code ranges} were not committed (Raft refused
     * them, or this node lost its leadership): whatever of them is still held is deliverable again here.
     */
    public void purgeNotCommitted(List<IdRange> ranges) {
        executor.execute(() -> giveBacks.purgeNotCommitted(ranges));
    }

    /**
     * Rule R9 of docs/replication.md: the ACK entry of a {@code drop-oldest} drop of {@code id} was not committed (Raft
     * refused it, or this node lost its leadership): if it is still held, the message is deliverable here again. Any thread.
     */
    void dropNotCommitted(long id) {
        executor.execute(() -> giveBacks.dropNotCommitted(id));
    }

    /** After acks: feeds the slowed producers (C2) and re-evaluates the quota at once. */
    private void acknowledged(long count) {
        backlog.acknowledged(count);
        publishPath.updateFlow();
        publishPath.releaseConfirms();
    }

    /** Messages stored and visible (a publish, a forwarded copy, a commit): counted, and dispatched. */
    private void published(int count) {
        publishedMessages += count;
        scheduleDispatch();
    }

    /**
     * True if delivery {@code id} is this node's to settle: a consumer of this node holds it, or its dead-letterer moves
     * it (the move's own entry acknowledges it, R8).
     */
    private boolean settledHere(long id) {
        return order.deadLettering(id) || inAConsumersHands(id);
    }

    void nack(ConsumerSession session, NackFrame frame) {
        if (closed) {
            return; // deleted, as for an ack
        }
        settlements.nack(session, frame);
    }

    /** Removes a consumer; its outstanding messages go back to the front of the queue (D4). */
    void unsubscribe(ConsumerSession session) {
        if (session.closed) {
            return;
        }
        session.closed = true;
        consumers.remove(session);
        session.account.settle(session.credit + session.inFlight.size());
        session.credit = 0;
        if (!session.inFlight.isEmpty()) {
            long[] ids = session.inFlight.removeAll();
            for (int i = ids.length - 1; i >= 0; i--) {
                order.dueFirst(ids[i]);
            }
            redelivered += ids.length;
        }
        scheduleDispatch();
    }

    private void expireDeliveries() {
        if (closed) {
            return;
        }
        long deadline = System.nanoTime() - TimeUnit.MILLISECONDS.toNanos(options.ackTimeoutMs());
        for (ConsumerSession c : consumers) {
            long[] expired = c.inFlight.removeDeliveredBefore(deadline);
            for (long id : expired) {
                c.credit++;
                order.takenBack(id, c);
                redelivered++;
            }
            if (expired.length > 0) {
                // One line per consumer and pass, not per message (thousands can time out at once), rate-limited too.
                manager.messageLog().info(LOG, "Queue '{}': {} messages (ids {} to {}) not acknowledged by {} within {} ms;"
                        + " redelivering them.", name, expired.length, expired[0], expired[expired.length - 1],
                        Printable.escaped(c.connection.describe()), options.ackTimeoutMs());
            }
        }
        if (order.hasDue()) {
            scheduleDispatch();
        }
    }

    // ------------------------------------------------------------------ delivery

    /** Delivers again if there is anything to deliver (after a connection became writable). */
    void wake() {
        scheduleDispatch();
    }

    private void scheduleDispatch() {
        if (!dispatchScheduled && !closed) {
            dispatchScheduled = true;
            executor.execute(this::dispatch);
        }
    }

    private void dispatch() {
        dispatchScheduled = false;
        dispatchPasses++;
        if (closed || consumers.isEmpty()) {
            return;
        }
        deliveredMessages += dispatcher.dispatch(consumers, options.maxDeliveries());
        if (backlog.discardsUnseen(store.discardedMessageBytes())) { // the reader met a damaged record: off the backlog
            publishPath.updateFlow();
        }
    }

    /**
     * The message, or null if it is acknowledged or its record is damaged: the store then discarded
     * it (acknowledged, logged and counted it), as its readers do. On the executor; also a late TX_ACK's
     * ({@link QueueTransactions}).
     */
    StoredMessage readUnlessDamaged(long id) {
        try {
            return readById.apply(id);
        } catch (CorruptRecordException e) {
            return null;
        }
    }

    /**
     * Tests: {@link #readUnlessDamaged} reads through {@code reads}, which may throw as a failing store does (no real
     * store fails a read on demand) or read the store. On the executor.
     */
    void readsThrough(LongFunction<StoredMessage> reads) {
        this.readById = reads;
    }

    /** Hands a message to the dead-letter moves ({@link DeadLetterMoves}). */
    private void deadLetter(StoredMessage message, int deliveries, String reason) {
        deadLetters.start(message, deliveries, reason);
    }

    private void deadLetterDropped(StoredMessage message, String reason) {
        deadLetters.startDrop(message, reason);
    }

    /**
     * True if message {@code id} is in a consumer's in-flight deliveries, or was acknowledged by one and waits for its
     * entry's apply (a cluster leader, R5): drop-oldest passes it.
     */
    private boolean outWithAConsumer(long id) {
        return acks.awaitingApply(id) || inAConsumersHands(id);
    }

    /**
     * {@link #outWithAConsumer} for one drop-oldest walk, which tests every id it passes under the store's lock: with
     * more than two consumers, one set of their in-flight ids, so that each id costs one lookup, not one per consumer.
     */
    private LongPredicate outWithAConsumerNow() {
        if (consumers.size() <= 2) {
            return this::outWithAConsumer;
        }
        IdSet inHands = new IdSet();
        for (ConsumerSession c : consumers) {
            for (long id : c.inFlight.ids()) {
                inHands.add(id);
            }
        }
        return id -> acks.awaitingApply(id) || inHands.contains(id);
    }

    /** True if message {@code id} is in a consumer's in-flight deliveries. */
    private boolean inAConsumersHands(long id) {
        for (int i = 0; i < consumers.size(); i++) {
            if (consumers.get(i).inFlight.contains(id)) {
                return true;
            }
        }
        return false;
    }

    /** True while a message whose dead-letter move failed waits for its retry: drop-oldest then makes no room. */
    boolean deadLetterRefusing() {
        return deadLetters.refusing();
    }

    /**
     * Stores a message another queue forwards here (a dead-letter copy), on this queue's executor and
     * under its quotas, as a publish would be; completes once the copy is durable, or exceptionally
     * with the reason it was refused.
     */
    CompletableFuture<Long> acceptForwarded(long producerId, long producerSequence, ByteBuffer headers, ByteBuffer payload) {
        return publishPath.forward(producerId, producerSequence, headers, payload, false);
    }

    /**
     * A cluster node stores the leader's dead-letter copy of the log's entry {@code logIndex} (rule R8 of
     * docs/replication.md): no quota check, as {@link #applyReplicated}; stored under the entry's identity
     * ({@link ProducerTable#DEAD_LETTER_COPIES_PRODUCER_ID}, the index), and not again if this queue holds it already
     * (a replay after a crash before the original's ack): then it completes with -1. {@code submittedHere}: this
     * node admitted the copy ({@link #admitCopy}), which is no longer uncommitted.
     */
    public CompletableFuture<Long> applyForwarded(long logIndex, ByteBuffer headers, ByteBuffer payload, boolean submittedHere) {
        return publishPath.forward(ProducerTable.DEAD_LETTER_COPIES_PRODUCER_ID, logIndex, headers, payload, submittedHere);
    }

    /**
     * A cluster node stores what a committed transaction published here (rule R13 of docs/replication.md): no quota
     * check, as {@link #applyReplicated}; under {@link ProducerTable#CLUSTER_TRANSACTIONS_PRODUCER_ID} with sequences from
     * {@code firstSequence}, each once (a replay stores none twice). Completes once they are durable here.
     */
    public CompletableFuture<Void> applyTransactionMessages(long firstSequence, List<byte[]> headers, List<byte[]> payloads) {
        return publishPath.forwardTransaction(firstSequence, headers, payloads);
    }

    /**
     * Removes every message that is not out with a consumer: acknowledges it in the store. Messages
     * delivered and not yet acknowledged stay, and are acknowledged or redelivered as usual.
     * Completes with the number removed once those acks are durable ({@link QueuePurge#answerWhenDurable}), or fails
     * with a {@link io.sluice.storage.StorageFailedException} if they could not be written: the messages are removed all
     * the same (in memory only), and the queue's figures say so.
     */
    public io.netty.util.concurrent.Future<Long> purge() {
        io.netty.util.concurrent.Promise<Long> answer = executor.newPromise();
        executor.execute(() -> QueuePurge.answerWhenDurable(store, () -> {
            if (closed) {
                throw deleted(); // found by the connection before another deleted it: nothing to remove
            }
            QueuePurge.Purged purged = QueuePurge.removeWaiting(store, consumers, tracked, order, transactions, backlog);
            acknowledged(purged.removed());
            if (purged.failure() != null) {
                LOG.warn("Queue '{}' purge failed: {}", name, purged.failure().getMessage());
                throw purged.failure();
            }
            LOG.info("Queue '{}' purged: {} messages removed.", name, purged.removed());
            return purged.removed();
        }, answer));
        return answer;
    }

    /**
     * A cluster leader's purge (rule R7 of docs/replication.md, {@link Replication#purge}): picks what {@link #purge()}
     * would remove and holds it out of dispatch, changing nothing in the store; completes with the ranges it holds
     * ({@link QueuePurge#holdWaiting}: never a step per message) and how many messages they hold. Each
     * is acknowledged when the ACK entry naming it is applied here ({@link #applyReplicatedAcks}), as on every node, or
     * given back ({@link #purgeNotCommitted}, {@link #leadershipLost}).
     */
    io.netty.util.concurrent.Future<QueuePurge.Held> holdForPurge() {
        return executor.submit(() -> QueuePurge.holdWaiting(store, consumers, tracked, order, transactions, acks, leaderHold));
    }

    // ------------------------------------------------------------------ figures and lifecycle

    /** Messages stored and not acknowledged, as clients see them: without the pending ones (T2). Any thread. */
    public long messageCount() { // off the executor a staging under way is pending before it is stored: 0, not -1
        return Math.max(0, store.unackedMessages() - transactions.stagedMessages());
    }

    /** Unacknowledged bytes (headers plus payload) as the broker counts them for byte quotas. */
    public long backlogBytes() {
        return backlog.bytes();
    }

    /** Dispatch passes run since the queue opened. On the queue's executor, which counts them. */
    public long dispatchPasses() {
        return dispatchPasses;
    }

    public long dropped() {
        return dropOldest.dropped() + deadLetters.dropsMoved();
    }

    public long publishRefused() {
        return publishPath.refused();
    }

    public long deadLettered() {
        return deadLetters.moved();
    }

    /** Dead-letters that failed (the dead-letter queue refused, or could not be created); the message stayed. */
    public long deadLetterFailures() {
        return deadLetters.failures();
    }

    public long redelivered() {
        return redelivered;
    }

    /** Producer checkpoints that could not be written since the queue opened; any thread. */
    public long producerCheckpointFailures() {
        return producers.checkpointFailures();
    }

    public int consumerCount() {
        return consumers.size();
    }

    /** The queue's figures, consumers and producers, taken on the executor (for metrics and the admin API). */
    public io.netty.util.concurrent.Future<QueueSnapshot> snapshot() {
        return executor.submit(() -> {
            List<QueueSnapshot.ConsumerFigures> consumerFigures = consumers.stream().map(ConsumerSession::figures).toList();
            int inFlight = consumerFigures.stream().mapToInt(QueueSnapshot.ConsumerFigures::unackedMessages).sum();
            List<String> producers = publishers.ids();
            // Rule R9: a drop this leader chose counts as gone while its entry is in flight, as on a single broker.
            long backlogMessages = Math.max(0, messageCount() - backlog.heldDrops());
            return new QueueSnapshot(name, backlogMessages, backlog.bytes(), inFlight, backlog.state(),
                    backlog.reason(), consumerFigures, producers, countersNow(),
                    order.oldestReadyTimestampMillis(), backlog.blockedNanos(), this.producers.table().tracked());
        });
    }

    /** The message counters alone, taken on the executor: for rates, which need no more of a {@link #snapshot}. */
    public io.netty.util.concurrent.Future<QueueSnapshot.Counters> counters() {
        return executor.submit(this::countersNow);
    }

    private QueueSnapshot.Counters countersNow() {
        return new QueueSnapshot.Counters(publishedMessages, pendingConfirms.confirmedStored(), deliveredMessages, redelivered,
                ackedMessages, settlements.nacked(), deadLetters.moved(), deadLetters.failures(), dropped(), publishRefused(),
                pendingConfirms.confirmedResends(), producers.table().evictions(),
                producers.table().expiries());
    }

    /**
     * Sets where the publish-to-confirm latency (nanoseconds, one sample per PUBLISH frame when its
     * confirm is released) and the publish-to-ack latency (store-clock milliseconds, one sample per
     * ACK frame, for its oldest message) go. Called by the metrics; the recorders run on the executor.
     */
    public void recordLatencies(LongConsumer confirmNanos, LongConsumer ackMillis) {
        publishPath.recordConfirmLatency(confirmNanos);
        settlements.recordAckLatency(ackMillis);
    }

    /** True once {@link #close} has run (the queue was deleted or the broker stopped). */
    public boolean isClosed() {
        return closed;
    }

    /** Rule R4 of docs/replication.md: a marker covers every entry applied so far ({@link QueueManager#appliedEntriesMarked}). */
    CompletableFuture<Void> producersMarked() {
        try {
            return CompletableFuture.runAsync(producers::marked, executor);
        } catch (java.util.concurrent.RejectedExecutionException closed) {
            return CompletableFuture.completedFuture(null); // a queue closed meanwhile has no table left to free
        }
    }

    /** What a request the connection routed here before the queue's delete closed it is told. */
    private BrokerException deleted() {
        return new BrokerException(ErrorCode.UNKNOWN_QUEUE, "queue '" + name + "' was deleted");
    }

    /** Stops serving: drops consumers (their connections are told by the caller) and closes the reader. */
    void close() {
        closed = true;
        if (ackTimeoutTask != null) {
            ackTimeoutTask.cancel(false);
        }
        for (ConsumerSession c : consumers) {
            c.closed = true;
            c.account.settle(c.credit + c.inFlight.size());
            // Settled once: the consumer's later frames find nothing (its tag lives on until it unsubscribes).
            c.credit = 0;
            c.inFlight.removeAll();
        }
        consumers.clear();
        order.close();
        if (backlog.state() != FlowState.FREE) {
            // A producer told SLOW or BLOCKED would otherwise hold its messages for this name until it reconnects: it
            // publishes nothing, so it never joins the publishers of a queue declared again under the name.
            publishers.tell(FlowState.FREE, "queue '" + name + "' was deleted");
        }
        pendingConfirms.refuseAll(ErrorCode.UNKNOWN_QUEUE, "queue '" + name + "' was deleted before the message was confirmed");
    }

    /** What this queue does after its transactions' side changed its state (on the executor). */
    private final class TransactionEffects implements QueueTransactions.Effects {
        @Override
        public void acked(long count) {
            if (count > 0) {
                ackedMessages += count;
                acknowledged(count);
                scheduleDispatch();
            }
        }

        @Override
        public void requeued(int count) {
            redelivered += count;
            scheduleDispatch();
        }

        @Override
        public void visible(int count) {
            publishPath.updateFlow();
            published(count);
        }

        @Override
        public void backlogChanged() {
            publishPath.updateFlow();
            publishPath.releaseConfirms(); // a rollback may have freed the queue; a TX_PUBLISH's window may go
        }
    }
}
