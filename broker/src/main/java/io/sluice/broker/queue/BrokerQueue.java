package io.sluice.broker.queue;

import io.netty.buffer.ByteBufAllocator;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.broker.flow.FlowGate;
import io.sluice.broker.flow.QuotaSettings;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.FlowFrame;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.DeliverFrameBuilder;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.PublishCursor;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.storage.MessageTooLargeException;
import io.sluice.storage.QueueReader;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StorageFailedException;
import io.sluice.storage.StorageFilesExhaustedException;
import io.sluice.storage.StorageFullException;
import io.sluice.storage.StoredMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;

/**
 * A queue as the broker serves it: publishes into its {@link QueueStore}, confirms once stored,
 * delivers to competing consumers round-robin within their credit, tracks each delivery until it is
 * acknowledged, and redelivers or dead-letters what is not.
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
    private static final int MAX_DELIVER_FRAME_BYTES = 256 << 10;
    /** Frame header, consumer tag and message count of a DELIVER frame, rounded up (docs/protocol.md). */
    private static final int DELIVER_FRAME_OVERHEAD_BYTES = 64;
    /** Per message in a DELIVER frame: id, delivery count and the two length prefixes. */
    private static final int DELIVER_MESSAGE_OVERHEAD_BYTES = 24;
    public static final String HEADER_DEAD_LETTER_FROM = "x-dead-letter-from";
    public static final String HEADER_DEAD_LETTER_REASON = "x-dead-letter-reason";
    public static final String HEADER_DELIVERY_COUNT = "x-delivery-count";
    public static final String HEADER_ORIGINAL_ID = "x-original-id";

    private final String name;
    private final QueueStore store;
    private final EventExecutor executor;
    private final QueueManager manager;
    private volatile QueueOptions options;

    private final List<ConsumerSession> consumers = new ArrayList<>();
    private int nextConsumer;
    private QueueReader reader;
    /** Redeliveries due now, in the order they are to go out. */
    private final ArrayDeque<Long> ready = new ArrayDeque<>();
    /** Every message delivered and unacknowledged, or waiting for redelivery. */
    private final IdSet tracked = new IdSet();
    private final ArrayDeque<PendingConfirm> pendingConfirms = new ArrayDeque<>();
    /** Connections that published here: told of flow state changes. */
    private final Set<ClientConnection> publishers = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
    private final FlowGate gate;
    /** Headers plus payload bytes of the unacknowledged messages, kept exact by publishes and acks. */
    private long backlogBytes;
    /** While slowed or blocked: messages acknowledged and not yet matched by a released confirm (C2). */
    private long slowTokens;
    private String diskBlockedReason;
    private final int publishAllowance;
    private long dropped;
    private long publishRefused;
    private boolean dispatchScheduled;
    private final long[] ackBatch = new long[1024];
    /** Deliveries of the current dispatch not yet recorded in the store (D3). */
    private final long[] deliveryIds = new long[1024];
    private final int[] deliveryCounts = new int[1024];
    private int deliveryCount;
    private int ackBatchSize;
    /** The oldest store timestamp among the messages of the ACK frame being applied. */
    private long ackOldestAppendedMillis;
    private final InFlightDeliveries.Removed ackOne = this::ackOne;
    private ScheduledFuture<?> ackTimeoutTask;
    private long deadLettered;
    private long redelivered;
    /** Message counters for metrics: written only on the executor, read through {@link #snapshot()}. */
    private long publishedMessages;
    private long confirmedMessages;
    private long deliveredMessages;
    private long ackedMessages;
    private long nackedMessages;
    /** BLOCKED time before the current stretch, and when that stretch began (meaningful while blocked). */
    private long blockedNanosBefore;
    private long blockedSinceNanos;
    /** Latency recorders set by the metrics (no-ops without them); called on the executor, once per frame. */
    private volatile LongConsumer confirmLatencyNanos = NO_RECORDER;
    private volatile LongConsumer ackLatencyMillis = NO_RECORDER;
    private static final LongConsumer NO_RECORDER = value -> { };
    /** Upper bound on the ids examined per snapshot to find the oldest ready message. */
    private static final int OLDEST_READY_SCAN_LIMIT = 10_000;
    private boolean closed;

    BrokerQueue(String name, QueueStore store, EventExecutor executor, QueueManager manager, QueueOptions options,
                int publishAllowance) {
        this.name = name;
        this.store = store;
        this.executor = executor;
        this.manager = manager;
        this.options = options;
        this.publishAllowance = publishAllowance;
        this.gate = new FlowGate(options.quota());
        this.backlogBytes = store.stats().unackedBytes();
        gate.update(store.unackedMessages(), backlogBytes);
        blockedSinceNanos = System.nanoTime();
        store.durabilityListener(durable -> {
            if (!executor.isShuttingDown()) {
                executor.execute(this::releaseConfirms);
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

    public QueueOptions options() {
        return options;
    }

    // ------------------------------------------------------------------ publish

    /** Stores every message of the frame, then confirms (now, or when durable). Releases the frame. */
    public void publish(ClientConnection connection, PublishFrame frame) {
        executor.execute(() -> {
            try {
                publishNow(connection, frame);
            } finally {
                frame.release();
            }
        });
    }

    private void publishNow(ClientConnection connection, PublishFrame frame) {
        long receivedAtNanos = System.nanoTime();
        PublishCursor cursor = frame.cursor();
        publishers.add(connection);
        Map<Long, List<IdRange>> stored = new LinkedHashMap<>();
        long lastId = -1;
        int storedMessages = 0;
        long storedBytes = 0;
        int refusedMessages = 0;
        long refusedBytes = 0;
        long backlog = store.unackedMessages();
        ByteBuffer frameBytes = null;
        // The run of consecutive sequences of one producer being stored: one IdRange per run, not per message.
        long runProducer = 0;
        long runFrom = -1;
        long runTo = -1;
        while (cursor.next()) {
            long producerId = cursor.producerId();
            long sequence = cursor.sequence();
            int payloadLength = cursor.payloadLength();
            int bytes = cursor.headersLength() + payloadLength;
            String refusal = admit(backlog, bytes);
            if (refusal != null) {
                connection.write(new PublishErrorFrame(producerId, IdRange.single(sequence), ErrorCode.QUEUE_BLOCKED, refusal));
                refusedMessages++;
                refusedBytes += payloadLength;
                publishRefused++;
                continue;
            }
            try {
                if (frameBytes == null) {
                    frameBytes = cursor.nioBuffer();
                }
                lastId = store.append(producerId, sequence, frameBytes, cursor.headersOffset(), cursor.headersLength(),
                        cursor.payloadOffset(), payloadLength);
                if (runFrom >= 0 && producerId == runProducer && sequence == runTo + 1) {
                    runTo = sequence;
                } else {
                    if (runFrom >= 0) {
                        addToRanges(stored, runProducer, runFrom, runTo);
                    }
                    runProducer = producerId;
                    runFrom = sequence;
                    runTo = sequence;
                }
                storedMessages++;
                storedBytes += payloadLength;
                backlogBytes += bytes;
                backlog++;
                continue;
            } catch (MessageTooLargeException e) {
                connection.write(new PublishErrorFrame(producerId, IdRange.single(sequence), ErrorCode.MESSAGE_TOO_LARGE, e.getMessage()));
            } catch (StorageFullException e) {
                connection.write(new PublishErrorFrame(producerId, IdRange.single(sequence), ErrorCode.STORAGE_FULL, e.getMessage()));
            } catch (StorageFailedException e) {
                connection.write(new PublishErrorFrame(producerId, IdRange.single(sequence), ErrorCode.STORAGE_FAILED, e.getMessage()));
            } catch (StorageFilesExhaustedException e) {
                // The process is out of file descriptors: this queue cannot open a segment now; the others go on.
                connection.write(new PublishErrorFrame(producerId, IdRange.single(sequence), ErrorCode.RESOURCE_LIMIT, e.getMessage()));
            } catch (RuntimeException e) {
                LOG.error("Queue '{}': storing a message from {} failed.", name, connection.describe(), e);
                connection.write(new PublishErrorFrame(producerId, IdRange.single(sequence), ErrorCode.INTERNAL_ERROR,
                        "the broker could not store the message; see the broker log"));
            }
            refusedMessages++;
            refusedBytes += payloadLength;
        }
        if (runFrom >= 0) {
            addToRanges(stored, runProducer, runFrom, runTo);
        }
        if (refusedMessages > 0) {
            connection.returnPublishCredit(refusedMessages, refusedBytes);
        }
        if (storedMessages > 0) {
            publishedMessages += storedMessages;
            pendingConfirms.add(new PendingConfirm(lastId, connection, stored, storedMessages, storedBytes, receivedAtNanos));
            updateFlow();
            releaseConfirms();
            scheduleDispatch();
        }
        connection.flush();
    }

    /**
     * Whether one more message of {@code bytes} may be stored with the backlog at {@code backlog}
     * messages: null if so, else the reason (A1..A3).
     * <ul>
     *   <li>A1 below the hard level, or no hard level: yes;</li>
     *   <li>A2 blocked (quota with policy block, or the disk guard): messages already in flight when
     *       the producer was told are stored, up to the publish window beyond the hard level; after
     *       that, refused;</li>
     *   <li>A3 policy reject: refused at once; policy drop-oldest: the oldest message not out with
     *       a consumer is discarded to make room.</li>
     * </ul>
     */
    private String admit(long backlog, int bytes) {
        QuotaSettings quota = gate.quota();
        boolean overHard = (quota.hardMessages() > 0 && backlog >= quota.hardMessages())
                || (quota.hardBytes() > 0 && backlogBytes + bytes > quota.hardBytes());
        if (diskBlockedReason != null) {
            return "queue '" + name + "' is blocked: " + diskBlockedReason;
        }
        if (!overHard) { // A1
            return null;
        }
        switch (quota.overflow()) {
            case REJECT -> {
                return "queue '" + name + "' is full: " + gate.reason() + "; the overflow policy is reject";
            }
            case DROP_OLDEST -> {
                return dropOldest() ? null : "queue '" + name + "' is full and every message is out with a consumer";
            }
            default -> { // A2
                long limit = (quota.hardMessages() > 0 ? quota.hardMessages() : Long.MAX_VALUE / 2) + publishAllowance;
                return backlog < limit ? null : "queue '" + name + "' is blocked: " + gate.reason()
                        + "; wait for FLOW before publishing more";
            }
        }
    }

    /** Discards the oldest unacknowledged message not out with a consumer (dead-lettered if the queue says so). */
    private boolean dropOldest() {
        for (long id = store.nextUnacked(0); id >= 0; id = store.nextUnacked(id + 1)) {
            if (tracked.contains(id)) {
                continue;
            }
            StoredMessage m = store.read(id);
            if (m == null) {
                continue;
            }
            if (options.deadLetterDropped()) {
                deadLetter(m, m.deliveryCount(), "dropped to make room: " + gate.reason());
            } else {
                store.ack(id);
            }
            backlogBytes -= m.headersLength() + m.payloadLength();
            dropped++;
            return true;
        }
        return false;
    }

    /**
     * Releases confirms in arrival order (C1..C2): C1 a confirm waits until its messages are
     * durable; C2 while the queue is slowed, confirms are released only as consumers acknowledge,
     * one message for one, so producers, whose in-flight windows fill up, run at the consumers'
     * pace. (Blocked producers are told to stop; what they had in flight is confirmed as stored.)
     * Each released confirm also gives the producer its publish window back.
     */
    private void releaseConfirms() {
        long durable = store.durableIndex();
        boolean gated = gate.state() == FlowState.SLOWED;
        Set<ClientConnection> touched = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
        LongConsumer latency = confirmLatencyNanos;
        long now = 0;
        while (!pendingConfirms.isEmpty()) {
            PendingConfirm p = pendingConfirms.peek();
            if (p.lastId > durable || (gated && slowTokens <= 0)) {
                break;
            }
            pendingConfirms.poll();
            if (now == 0) {
                now = System.nanoTime();
            }
            latency.accept(now - p.receivedAtNanos); // one sample per PUBLISH frame confirmed, not per message
            confirmedMessages += p.messages;
            if (gated) {
                slowTokens -= p.messages;
            }
            p.ranges.forEach((producer, ranges) -> p.connection.write(new ConfirmFrame(producer, ranges)));
            p.connection.returnPublishCredit(p.messages, p.bytes);
            touched.add(p.connection);
        }
        StorageFailedException failed = store.failure();
        if (failed != null) {
            refuseUnconfirmed(failed, touched);
        }
        touched.forEach(ClientConnection::flush);
    }

    /**
     * The store failed (docs/storage.md, rule "a failed force is final"): nothing still waiting will
     * ever be durable, so each producer is told now, and may publish again after a restart.
     */
    private void refuseUnconfirmed(StorageFailedException failed, Set<ClientConnection> touched) {
        while (!pendingConfirms.isEmpty()) {
            PendingConfirm p = pendingConfirms.poll();
            p.ranges.forEach((producer, ranges) -> ranges.forEach(range ->
                    p.connection.write(new PublishErrorFrame(producer, range, ErrorCode.STORAGE_FAILED, failed.getMessage()))));
            p.connection.returnPublishCredit(p.messages, p.bytes);
            touched.add(p.connection);
        }
    }

    /** Re-evaluates the quota after a publish or an ack batch, and tells producers of a change. */
    private void updateFlow() {
        FlowState before = effectiveState();
        boolean changed = gate.update(store.unackedMessages(), backlogBytes);
        if (changed && gate.state() == FlowState.FREE) {
            slowTokens = 0;
        }
        FlowState after = effectiveState();
        if (after != before) {
            String reason = diskBlockedReason != null ? diskBlockedReason : gate.reason();
            LOG.info("Queue '{}' is now {}: {}.", name, after, reason);
            flowChanged(before, after);
            notifyPublishers(after, reason);
        }
    }

    /** Accumulates the time spent BLOCKED, for {@code sluice_queue_blocked_seconds_total}. */
    private void flowChanged(FlowState before, FlowState after) {
        if (after == FlowState.BLOCKED && before != FlowState.BLOCKED) {
            blockedSinceNanos = System.nanoTime();
        } else if (before == FlowState.BLOCKED && after != FlowState.BLOCKED) {
            blockedNanosBefore += System.nanoTime() - blockedSinceNanos;
        }
    }

    private long blockedNanos() {
        return blockedNanosBefore + (effectiveState() == FlowState.BLOCKED ? System.nanoTime() - blockedSinceNanos : 0);
    }

    private FlowState effectiveState() {
        return diskBlockedReason != null ? FlowState.BLOCKED : gate.state();
    }

    private void notifyPublishers(FlowState state, String reason) {
        publishers.removeIf(c -> !c.isActive());
        for (ClientConnection c : publishers) {
            c.write(new FlowFrame(name, state, reason));
            c.flush();
        }
    }

    /** Broker-wide disk guard: blocks (reason) or unblocks (null) every producer of this queue. */
    public void diskBlocked(String reason) {
        executor.execute(() -> {
            FlowState before = effectiveState();
            diskBlockedReason = reason;
            FlowState after = effectiveState();
            if (before != after) {
                LOG.info("Queue '{}' is now {}: {}.", name, after, reason == null ? "disk space is back" : reason);
                flowChanged(before, after);
                notifyPublishers(after, reason == null ? "free disk space is above the reserve again" : reason);
            }
        });
    }

    /** The flow state producers were last told. */
    public FlowState flowState() {
        return effectiveState();
    }

    /** Adds the stored sequences {@code from..to} of {@code producerId} to its ranges, merging with the last. */
    private static void addToRanges(Map<Long, List<IdRange>> stored, long producerId, long from, long to) {
        List<IdRange> ranges = stored.computeIfAbsent(producerId, p -> new ArrayList<>());
        if (!ranges.isEmpty()) {
            IdRange last = ranges.get(ranges.size() - 1);
            if (last.to() + 1 == from) {
                ranges.set(ranges.size() - 1, new IdRange(last.from(), to));
                return;
            }
        }
        ranges.add(new IdRange(from, to));
    }

    /** Publishes still waiting for their sync; for graceful shutdown. */
    public int pendingConfirms() {
        return pendingConfirms.size();
    }

    // ------------------------------------------------------------------ consumers

    /** Adds a consumer. Runs on the queue's executor; returns the session for later frames. */
    ConsumerSession subscribe(ClientConnection connection, int tag, long credit) {
        ConsumerSession session = new ConsumerSession(connection, tag, credit);
        consumers.add(session);
        if (reader == null) {
            reader = store.openReader();
        }
        scheduleDispatch();
        return session;
    }

    void credit(ConsumerSession session, long credit) {
        session.credit = Math.min(Long.MAX_VALUE / 2, session.credit + credit);
        scheduleDispatch();
    }

    /** Acknowledges the ids of the ranges that are outstanding on this session. */
    void ack(ConsumerSession session, AckFrame frame) {
        long acked = 0;
        ackOldestAppendedMillis = Long.MAX_VALUE;
        for (IdRange range : frame.messageIds()) {
            int hit = session.inFlight.removeRange(range.from(), range.to(), ackOne);
            acked += hit;
            if (hit == 0) {
                if (range.from() == range.to() && lateAck(range.from())) {
                    acked++;
                    continue;
                }
                session.connection.write(new ErrorFrame(0, ErrorCode.UNKNOWN_MESSAGE_ID, "ack of message ids " + range.from()
                        + ".." + range.to() + " on consumer " + session.tag + " of queue '" + name + "': none is outstanding on it"));
                session.connection.flush();
            }
        }
        if (ackBatchSize > 0) {
            store.ackAll(ackBatch, ackBatchSize); // one store lock per ACK frame, not per message
            ackBatchSize = 0;
        }
        if (ackOldestAppendedMillis != Long.MAX_VALUE) { // one sample per ACK frame: its oldest message
            ackLatencyMillis.accept(Math.max(0, store.nowMillis() - ackOldestAppendedMillis));
        }
        if (acked > 0) {
            ackedMessages += acked;
            acknowledged(acked);
            scheduleDispatch();
        }
    }

    /** One acknowledged delivery of an ACK frame: batched for the store, taken off the backlog. */
    private void ackOne(long id, int bytes, long appendedAtMillis) {
        if (ackBatchSize == ackBatch.length) {
            store.ackAll(ackBatch, ackBatchSize);
            ackBatchSize = 0;
        }
        ackBatch[ackBatchSize++] = id;
        backlogBytes -= bytes;
        ackOldestAppendedMillis = Math.min(ackOldestAppendedMillis, appendedAtMillis);
        tracked.remove(id);
    }

    /** After acks: feeds the slowed producers (C2) and re-evaluates the quota at once. */
    private void acknowledged(long count) {
        if (gate.state() == FlowState.SLOWED) {
            slowTokens = Math.min(slowTokens + count, publishAllowance);
        }
        updateFlow();
        releaseConfirms();
    }

    /** An ack of a message taken back after its ack timeout and not yet redelivered still counts. */
    private boolean lateAck(long id) {
        if (ready.remove(id)) {
            StoredMessage m = store.read(id);
            if (m != null) {
                backlogBytes -= m.headersLength() + m.payloadLength();
            }
            store.ack(id);
            tracked.remove(id);
            acknowledged(1);
            return true;
        }
        return false;
    }

    void nack(ConsumerSession session, NackFrame frame) {
        for (IdRange range : frame.messageIds()) {
            List<Long> ids = new ArrayList<>();
            session.inFlight.removeRange(range.from(), range.to(), (id, bytes, appendedAtMillis) -> ids.add(id));
            if (ids.isEmpty()) {
                session.connection.write(new ErrorFrame(0, ErrorCode.UNKNOWN_MESSAGE_ID, "nack of message ids " + range.from()
                        + ".." + range.to() + " on consumer " + session.tag + " of queue '" + name + "': none is outstanding on it"));
                session.connection.flush();
                continue;
            }
            nackedMessages += ids.size();
            for (long id : ids) {
                switch (frame.action()) {
                    case REJECT_TO_DEAD_LETTER -> {
                        StoredMessage m = store.read(id);
                        if (m != null) {
                            deadLetter(m, m.deliveryCount(), "rejected by the consumer");
                            backlogBytes -= m.headersLength() + m.payloadLength();
                            acknowledged(1);
                        }
                        tracked.remove(id);
                    }
                    case REQUEUE -> requeueLater(id, options.redeliveryDelayMs(store.deliveryCount(id)));
                    case REQUEUE_AFTER_DELAY -> requeueLater(id, Math.max(0, frame.delayMs()));
                    default -> throw new IllegalStateException("unknown nack action " + frame.action());
                }
            }
        }
        scheduleDispatch();
    }

    private void requeueLater(long id, long delayMs) {
        if (delayMs <= 0) {
            ready.addLast(id);
            return;
        }
        executor.schedule(() -> {
            if (!closed && tracked.contains(id)) {
                ready.addLast(id);
                scheduleDispatch();
            }
        }, delayMs, TimeUnit.MILLISECONDS);
    }

    /** Removes a consumer; its outstanding messages go back to the front of the queue (D4). */
    void unsubscribe(ConsumerSession session) {
        if (session.closed) {
            return;
        }
        session.closed = true;
        consumers.remove(session);
        if (!session.inFlight.isEmpty()) {
            long[] ids = session.inFlight.removeAll();
            for (int i = ids.length - 1; i >= 0; i--) {
                ready.addFirst(ids[i]);
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
            for (long id : c.inFlight.removeDeliveredBefore(deadline)) {
                c.credit++;
                ready.addLast(id);
                redelivered++;
                LOG.info("Queue '{}': message {} not acknowledged by {} within {} ms; redelivering it.",
                        name, id, c.connection.describe(), options.ackTimeoutMs());
            }
        }
        if (!ready.isEmpty()) {
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
        if (closed || consumers.isEmpty()) {
            return;
        }
        Map<ConsumerSession, DeliverFrameBuilder> batches = new IdentityHashMap<>();
        long now = System.nanoTime();
        while (true) {
            ConsumerSession consumer = nextConsumerWithCredit();
            if (consumer == null) {
                break;
            }
            StoredMessage message = nextMessage();
            if (message == null) {
                break;
            }
            int count = message.deliveryCount() + 1;
            if (count > options.maxDeliveries()) {
                deadLetter(message, message.deliveryCount(), "delivered " + message.deliveryCount()
                        + " times without an acknowledgement (max-deliveries " + options.maxDeliveries() + ")");
                tracked.remove(message.id());
                backlogBytes -= message.headersLength() + message.payloadLength();
                acknowledged(1);
                continue;
            }
            noteDelivery(message.id(), count);
            deliveredMessages++;
            consumer.credit--;
            consumer.inFlight.put(message.id(), now, message.headersLength() + message.payloadLength(),
                    message.timestampMillis());
            tracked.add(message.id());
            // A batch never exceeds the frame size agreed with the client: close it before a message
            // that would not fit (a single message always fits: max-message-bytes < max-frame-bytes).
            int limit = Math.min(MAX_DELIVER_FRAME_BYTES, consumer.connection.maxFrameBytes() - DELIVER_FRAME_OVERHEAD_BYTES);
            int messageBytes = DELIVER_MESSAGE_OVERHEAD_BYTES + message.headersLength() + message.payloadLength();
            DeliverFrameBuilder open = batches.get(consumer);
            if (open != null && open.messageCount() > 0 && open.encodedBytes() + messageBytes > limit) {
                recordDeliveries();
                consumer.connection.write(open.build());
                batches.remove(consumer);
            }
            DeliverFrameBuilder batch = batches.computeIfAbsent(consumer,
                    c -> new DeliverFrameBuilder(ByteBufAllocator.DEFAULT, c.tag));
            batch.addEncoded(message.id(), count, message.array(), message.headersOffset(), message.headersLength(),
                    message.payloadOffset(), message.payloadLength());
            if (batch.encodedBytes() >= MAX_DELIVER_FRAME_BYTES) {
                recordDeliveries();
                consumer.connection.write(batch.build());
                batches.remove(consumer);
            }
        }
        recordDeliveries();
        Set<ClientConnection> touched = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
        batches.forEach((consumer, batch) -> {
            consumer.connection.write(batch.build());
            touched.add(consumer.connection);
        });
        for (ConsumerSession c : consumers) {
            touched.add(c.connection);
        }
        touched.forEach(ClientConnection::flush);
    }

    /** D3: a delivery about to go out; recorded in the store, with the others of its frame, before the frame is written. */
    private void noteDelivery(long id, int count) {
        if (deliveryCount == deliveryIds.length) {
            recordDeliveries();
        }
        deliveryIds[deliveryCount] = id;
        deliveryCounts[deliveryCount] = count;
        deliveryCount++;
    }

    /** Records the noted deliveries under one store lock (instead of one per message). */
    private void recordDeliveries() {
        if (deliveryCount > 0) {
            store.recordDeliveries(deliveryIds, deliveryCounts, deliveryCount);
            deliveryCount = 0;
        }
    }

    private ConsumerSession nextConsumerWithCredit() {
        int n = consumers.size();
        for (int i = 0; i < n; i++) {
            ConsumerSession c = consumers.get((nextConsumer + i) % n);
            if (c.credit > 0 && c.connection.isActive() && c.connection.isWritable()) {
                nextConsumer = (nextConsumer + i + 1) % n;
                return c;
            }
        }
        return null;
    }

    private StoredMessage nextMessage() {
        while (!ready.isEmpty()) {
            long id = ready.pollFirst();
            StoredMessage m = store.read(id);
            if (m != null) {
                redelivered++;
                return m;
            }
            tracked.remove(id);
        }
        // The reader returns each message once, relocated ones included (see QueueReader).
        return reader.next();
    }

    /** Moves a message to the dead-letter queue, with headers saying where from, how often delivered and why. */
    private void deadLetter(StoredMessage message, int deliveries, String reason) {
        BrokerQueue dlq = manager.deadLetterQueue(options.deadLetterQueue());
        ByteBuffer headers = appendHeaders(message,
                HEADER_DEAD_LETTER_FROM, name,
                HEADER_DEAD_LETTER_REASON, reason,
                HEADER_DELIVERY_COUNT, Integer.toString(deliveries),
                HEADER_ORIGINAL_ID, Long.toString(message.id()));
        try {
            dlq.store().append(message.producerId(), message.producerSequence(), headers,
                    ByteBuffer.wrap(message.array(), message.payloadOffset(), message.payloadLength()));
        } catch (RuntimeException e) {
            LOG.error("Queue '{}': could not dead-letter message {} to '{}'; it stays in the queue.", name, message.id(), dlq.name(), e);
            return;
        }
        store.ack(message.id());
        deadLettered++;
        dlq.executor().execute(dlq::scheduleDispatch);
        LOG.info("Queue '{}': message {} dead-lettered to '{}': {}.", name, message.id(), dlq.name(), reason);
    }

    private static ByteBuffer appendHeaders(StoredMessage message, String... keyValues) {
        int size = message.headersLength();
        for (String s : keyValues) {
            size += 4 + s.getBytes(StandardCharsets.UTF_8).length;
        }
        ByteBuffer out = ByteBuffer.allocate(size);
        out.put(message.array(), message.headersOffset(), message.headersLength());
        for (int i = 0; i < keyValues.length; i += 2) {
            byte[] key = keyValues[i].getBytes(StandardCharsets.UTF_8);
            byte[] value = keyValues[i + 1].getBytes(StandardCharsets.UTF_8);
            out.putShort((short) key.length).put(key).putInt(value.length).put(value);
        }
        return out.flip();
    }

    /**
     * Removes every message that is not out with a consumer: acknowledges it in the store. Messages
     * delivered and not yet acknowledged stay, and are acknowledged or redelivered as usual.
     * Completes with the number removed.
     */
    public io.netty.util.concurrent.Future<Long> purge() {
        return executor.submit(() -> {
            List<Long> ids = new ArrayList<>();
            store.forEachUnacked(ids::add);
            Set<Long> outstanding = new HashSet<>();
            for (ConsumerSession c : consumers) {
                for (long id : c.inFlight.ids()) {
                    outstanding.add(id);
                }
            }
            long removed = 0;
            for (long id : ids) {
                if (!outstanding.contains(id)) {
                    store.ack(id);
                    tracked.remove(id);
                    removed++;
                }
            }
            ready.clear();
            backlogBytes = store.stats().unackedBytes();
            acknowledged(removed);
            LOG.info("Queue '{}' purged: {} messages removed.", name, removed);
            return removed;
        });
    }

    // ------------------------------------------------------------------ figures and lifecycle

    /** Unacknowledged bytes (headers plus payload) as the broker counts them for byte quotas. */
    public long backlogBytes() {
        return backlogBytes;
    }

    public long dropped() {
        return dropped;
    }

    public long publishRefused() {
        return publishRefused;
    }

    public long deadLettered() {
        return deadLettered;
    }

    public long redelivered() {
        return redelivered;
    }

    public int consumerCount() {
        return consumers.size();
    }

    /** The queue's figures, consumers and producers, taken on the executor (for metrics and the admin API). */
    public io.netty.util.concurrent.Future<QueueSnapshot> snapshot() {
        return executor.submit(() -> {
            publishers.removeIf(c -> !c.isActive());
            List<QueueSnapshot.ConsumerFigures> consumerFigures = new ArrayList<>();
            int inFlight = 0;
            for (ConsumerSession c : consumers) {
                consumerFigures.add(new QueueSnapshot.ConsumerFigures(c.connection.id(), c.tag, c.credit, c.inFlight.size(),
                        c.connection.isWritable()));
                inFlight += c.inFlight.size();
            }
            List<String> producers = publishers.stream().map(ClientConnection::id).sorted().toList();
            FlowState state = effectiveState();
            return new QueueSnapshot(name, store.unackedMessages(), backlogBytes, inFlight, state,
                    diskBlockedReason != null ? diskBlockedReason : gate.reason(), consumerFigures, producers,
                    new QueueSnapshot.Counters(publishedMessages, confirmedMessages, deliveredMessages, redelivered,
                            ackedMessages, nackedMessages, deadLettered, dropped, publishRefused),
                    oldestReadyTimestampMillis(), blockedNanos());
        });
    }

    /**
     * Store timestamp of the oldest ready message, or -1: the older of the first unacknowledged
     * message this queue does not track (never delivered, or relocated) and the oldest redelivery
     * due now. Messages out with a consumer or waiting out a requeue delay are not ready. At most
     * {@value #OLDEST_READY_SCAN_LIMIT} ids are examined each way; past that the figure is -1 (unknown).
     */
    private long oldestReadyTimestampMillis() {
        long oldestId = -1;
        int examined = 0;
        for (long id = store.nextUnacked(0); id >= 0 && examined < OLDEST_READY_SCAN_LIMIT; id = store.nextUnacked(id + 1)) {
            examined++;
            if (!tracked.contains(id)) {
                oldestId = id;
                break;
            }
        }
        examined = 0;
        for (long id : ready) {
            if (examined++ >= OLDEST_READY_SCAN_LIMIT) {
                break;
            }
            if (oldestId < 0 || id < oldestId) {
                oldestId = id;
            }
        }
        StoredMessage m = oldestId < 0 ? null : store.read(oldestId);
        return m == null ? -1 : m.timestampMillis();
    }

    /**
     * Sets where the publish-to-confirm latency (nanoseconds, one sample per PUBLISH frame when its
     * confirm is released) and the publish-to-ack latency (store-clock milliseconds, one sample per
     * ACK frame, for its oldest message) go. Called by the metrics; the recorders run on the executor.
     */
    public void recordLatencies(LongConsumer confirmNanos, LongConsumer ackMillis) {
        this.confirmLatencyNanos = confirmNanos;
        this.ackLatencyMillis = ackMillis;
    }

    /** True once {@link #close} has run (the queue was deleted or the broker stopped). */
    boolean isClosed() {
        return closed;
    }

    /** Stops serving: drops consumers (their connections are told by the caller) and closes the reader. */
    void close() {
        closed = true;
        if (ackTimeoutTask != null) {
            ackTimeoutTask.cancel(false);
        }
        consumers.clear();
        if (reader != null) {
            reader.close();
            reader = null;
        }
        for (PendingConfirm p : pendingConfirms) {
            p.ranges.forEach((producer, ranges) -> ranges.forEach(r -> p.connection.write(
                    new PublishErrorFrame(producer, r, ErrorCode.UNKNOWN_QUEUE, "queue '" + name + "' was deleted before the message was confirmed"))));
            p.connection.returnPublishCredit(p.messages, p.bytes);
            p.connection.flush();
        }
        pendingConfirms.clear();
    }

    private record PendingConfirm(long lastId, ClientConnection connection, Map<Long, List<IdRange>> ranges,
                                  int messages, long bytes, long receivedAtNanos) {
    }
}
