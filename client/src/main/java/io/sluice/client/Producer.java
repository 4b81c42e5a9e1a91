package io.sluice.client;

import io.netty.channel.Channel;
import io.sluice.client.internal.LoopBatcher;
import io.sluice.client.internal.OutgoingHeaders;
import io.sluice.client.internal.OwingTask;
import io.sluice.client.internal.SequenceWindow;
import io.sluice.client.internal.SerialExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.protocol.FlowFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.MessageHeader;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.ProducerIds;
import io.sluice.protocol.ProducerInitFrame;
import io.sluice.protocol.ProducerOkFrame;
import io.sluice.protocol.PublishFrameBuilder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongFunction;

/**
 * Publishes to one queue under a random producerId with sequences 1, 2, 3, ... in send order. Thread-safe.
 *
 * <p>Batching: messages are handed to the network thread through a lock-free queue that it drains in bursts
 * (one loop task per burst, not per message); it writes them as one PUBLISH frame when the batch reaches
 * {@link ProducerOptions#maxBatchMessages()} or {@link ProducerOptions#maxBatchBytes()}, or at the end of the
 * burst, then flushes the channel once, and never goes beyond the broker's publish window or maxFrameBytes.
 *
 * <p>Back-pressure: at most {@link ProducerOptions#maxInFlight()} messages are unsettled; {@link #sendAsync}
 * blocks its caller until one settles. A message holds its slot until the network thread settles it (a confirm,
 * an error, or giving up on it), not until its future completes: a cancelled future frees nothing while the
 * message may still reach the broker, and a CONFIRM frees all its slots at once. While maxInFlight settled messages
 * wait for their futures to be completed (behind a callback that takes its time), senders wait too (rule "settlements
 * wait in a bounded queue", {@link ProducerInFlight}); a callback of this producer's own futures never waits for them,
 * and its sendAsync fails at once if twice maxInFlight are queued behind it.
 *
 * <p>A CONFIRM completes futures; a PUBLISH_ERROR fails exactly the messages it names with a
 * {@link SluiceException} carrying the broker's code. Futures complete on a dispatch thread, or on the network
 * thread with {@link ConnectionOptions#callbacksOnNetworkThread()}. The futures of the messages a producer sent complete
 * one after the other, in the order the broker settled them: a later confirm's callbacks run after an earlier one's
 * have returned, so a callback must not wait for a later message of the same producer ({@link #send} refuses to). While the connection is down, unsettled
 * messages wait and are resent after reconnecting (see {@link Connection}).
 */
public final class Producer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Producer.class);
    /** Queued by {@link #close()} behind the messages sent before it; never sent. */
    private static final Pending CLOSE = new Pending(List.of(), new byte[0], null);
    /**
     * The longest blocked timeout counted (about 73 years: never, in practice); a longer one is taken as this. Kept
     * well below Long.MAX_VALUE so that comparing it with differences of System.nanoTime() cannot overflow. Taken as
     * given, a timeout beyond Duration.toNanos() would throw on the network thread at the first FLOW BLOCKED, which
     * closes the producer and fails its messages, or would never create a producer that started blocked.
     */
    static final long MAX_BLOCKED_TIMEOUT_NANOS = Long.MAX_VALUE / 4;

    private final Connection connection;
    private final String queue;
    private final long producerId;
    private final ProducerOptions options;
    /** The in-flight window and the ordered completion of the messages' futures. */
    private final ProducerInFlight inFlight;
    /** {@link ProducerOptions#blockedTimeout()} in nanoseconds, at most {@link #MAX_BLOCKED_TIMEOUT_NANOS}. */
    private final long blockedTimeoutNanos;
    /** Frame header, queue name and messageCount: the bytes of a PUBLISH frame besides its messages. */
    private final int frameOverheadBytes;
    /** Keeps FLOW notifications in the order the broker sent them. */
    private final SerialExecutor flowCallbacks;
    /** Messages (and {@link #CLOSE}) on their way to the network thread, in call order. */
    private final LoopBatcher<Pending> submitted;
    private volatile boolean closed;

    // Owned by the network thread.
    /**
     * Below 1 once the sequences are used up: Long.MAX_VALUE was given (or stored under this name before this instance
     * registered). Not Long.MIN_VALUE, which carries no identity: stored untracked, stored again if resent.
     */
    private long nextSequence = 1;
    private final SequenceWindow<Pending> unsettled;
    private final ArrayDeque<Pending> unsent = new ArrayDeque<>();
    private long unsentBytes;
    /** On loop: PUBLISH frames were written during the current drain and wait for its one flush. */
    private boolean wroteUnflushed;
    /** On loop: the {@link #CLOSE} marker was taken, so every message sent before close() is known here. */
    private boolean closedOnLoop;
    /** On loop: the queue's flow state as the broker last told it; BLOCKED holds every unsent message back. */
    private io.sluice.protocol.FlowState flowState = io.sluice.protocol.FlowState.FREE;
    private ScheduledFuture<?> blockedTimer;
    /** What {@link #blockedTimer} runs, made once. */
    private OwingTask blockedTimerTask;
    /** On loop: a named producer holds its messages back until the broker answered its PRODUCER_INIT. */
    private boolean awaitingInit;
    /** Reconnects this named producer has resumed after, on loop: a resume's answer or retry for an older one is ignored. */
    private long resumes;
    /** The epoch the broker gave this named producer's instance; 0 for an unnamed producer. */
    private volatile int epoch;
    /** The highest sequence of this name the broker had stored when this instance registered. */
    private volatile long lastStoredSequence;

    Producer(Connection connection, String queue, ProducerOptions options) {
        this.connection = connection;
        this.queue = Objects.requireNonNull(queue, "queue");
        this.options = Objects.requireNonNull(options, "options");
        this.producerId = options.name() == null ? ProducerIds.random() : ProducerIds.forName(options.name());
        this.awaitingInit = options.name() != null;
        this.blockedTimeoutNanos = options.blockedTimeout().compareTo(Duration.ofNanos(MAX_BLOCKED_TIMEOUT_NANOS)) > 0
                ? MAX_BLOCKED_TIMEOUT_NANOS : options.blockedTimeout().toNanos();
        this.unsettled = new SequenceWindow<>(Math.min(options.maxInFlight(), 1 << 16));
        this.inFlight = new ProducerInFlight(queue, options.maxInFlight(), connection.serialCompletions());
        this.flowCallbacks = new SerialExecutor(connection::dispatch);
        this.submitted = new LoopBatcher<>(connection.loopExecutor(), new Submissions());
        this.frameOverheadBytes = 6 + 2 + queue.getBytes(StandardCharsets.UTF_8).length + 4;
    }

    public String queue() {
        return queue;
    }

    /** The id that, with the sequence, names each message to the broker: random, or derived from the name. */
    public long producerId() {
        return producerId;
    }

    /** The name of a named producer, or null. */
    public String name() {
        return options.name();
    }

    /**
     * The PRODUCER_INIT of this named producer for {@code epoch} ({@link ProducerInitFrame#NEW_INSTANCE} to register a
     * new instance, else the epoch it resumes), given its request id: one builder for the registration and the resumes.
     */
    LongFunction<Frame> initFrame(int epoch) {
        return requestId -> new ProducerInitFrame(requestId, queue, options.name(), epoch);
    }

    /** What a PRODUCER_INIT of this producer is called in its failures. */
    String initDescription() {
        return "PRODUCER_INIT '" + options.name() + "' on queue " + queue;
    }

    /** A named producer's epoch, given by the broker when this instance registered; 0 if unnamed. */
    public int epoch() {
        return epoch;
    }

    /**
     * For a named producer, the highest sequence under its name the broker had stored when this instance
     * registered (0 if none, or if the broker no longer tracked the name); this instance's sequences
     * continue after it. 0 for an unnamed producer.
     */
    public long lastStoredSequence() {
        return lastStoredSequence;
    }

    /** Sends a message without headers; see {@link #sendAsync(byte[], List)}. */
    public CompletableFuture<Void> sendAsync(byte[] payload) {
        return sendAsync(payload, List.of());
    }

    /** Sends a message with string headers, UTF-8 encoded, in the map's iteration order. */
    public CompletableFuture<Void> sendAsync(byte[] payload, Map<String, String> headers) {
        return sendAsync(payload, OutgoingHeaders.of(headers));
    }

    /**
     * Sends a message; the future completes when the broker confirmed it durable, or fails with a
     * {@link SluiceException}. Blocks the caller while {@code maxInFlight} messages are unsettled, or as many
     * settled ones wait for this producer's callbacks (from such a callback it does not wait for those). The payload
     * array must not be changed until the future completes (it is kept for resending). On the network thread
     * (a callback, with {@link ConnectionOptions#callbacksOnNetworkThread()}), which settles messages and so
     * must not wait for that, a full window fails the future at once.
     */
    public CompletableFuture<Void> sendAsync(byte[] payload, List<MessageHeader> headers) {
        Objects.requireNonNull(payload, "payload");
        Objects.requireNonNull(headers, "headers");
        if (connection.onNetworkThread()) {
            SluiceException full = inFlight.takeOnNetworkThread();
            if (full != null) {
                return CompletableFuture.failedFuture(full);
            }
            return enqueue(payload, OutgoingHeaders.copyOf(headers));
        }
        try {
            if (inFlight.mayNotWaitForSettlements()) {
                SluiceException full = inFlight.takeOnCallback();
                if (full != null) {
                    return CompletableFuture.failedFuture(full);
                }
            } else {
                inFlight.take(Long.MAX_VALUE);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return CompletableFuture.failedFuture(
                    new SluiceException("interrupted while waiting for room in the in-flight window", e));
        }
        return enqueue(payload, OutgoingHeaders.copyOf(headers));
    }

    /** Sends and waits for the confirm, at most the connection's request timeout. */
    public void send(byte[] payload) {
        send(payload, List.of(), connection.options().requestTimeout());
    }

    /** Sends and waits for the confirm, at most {@code timeout}. */
    public void send(byte[] payload, Duration timeout) {
        send(payload, List.of(), timeout);
    }

    /**
     * Sends and waits for the confirm. On timeout the message stays in flight and may still be stored. A timeout
     * too long to count in nanoseconds (such as ChronoUnit.FOREVER's) waits for good, rather than throw
     * ArithmeticException at once.
     *
     * @throws SluiceTimeoutException no confirm (or no room in the in-flight window) within {@code timeout}
     * @throws SluiceException        the broker refused the message
     * @throws IllegalStateException  called on a network thread of the client (from a callback), or from a callback of
     *                                this producer's own futures, which complete one after the other: the confirm it
     *                                would wait for comes only once that callback has returned
     */
    public void send(byte[] payload, List<MessageHeader> headers, Duration timeout) {
        Objects.requireNonNull(payload, "payload");
        connection.checkMayBlock("Producer.send");
        if (inFlight.onOwnCallback()) {
            throw new IllegalStateException("Producer.send to queue " + queue + " was called from a callback of this"
                    + " producer's own futures, which complete one after the other: the confirm it would wait for comes"
                    + " only after that callback returns. Use sendAsync there, or another producer");
        }
        long timeoutNanos = TimeUnit.NANOSECONDS.convert(timeout); // saturated at Long.MAX_VALUE
        long start = System.nanoTime();
        try {
            if (!inFlight.take(timeoutNanos)) {
                throw new SluiceTimeoutException("send to queue " + queue + ": " + options.maxInFlight()
                        + " messages were still unconfirmed, or as many settlements waited for this producer's callbacks,"
                        + " after " + timeout.toMillis() + " ms");
            }
            CompletableFuture<Void> future = enqueue(payload, OutgoingHeaders.copyOf(headers));
            future.get(Math.max(0, timeoutNanos - (System.nanoTime() - start)), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new SluiceTimeoutException("send to queue " + queue + " by producer " + producerId
                    + ": the broker did not confirm within " + timeout.toMillis() + " ms");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof SluiceException sluice) {
                throw sluice;
            }
            throw new SluiceException("send to queue " + queue + " failed: " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SluiceException("interrupted while sending to queue " + queue, e);
        }
    }

    /**
     * Stops accepting messages. Messages already sent keep their futures, which complete as the broker
     * answers or the connection closes.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return; // once: a second CLOSE marker would come round after a new producer of the same name registered
            }
            closed = true;
        }
        // Through the same queue as the messages, so the ones sent before close() are registered first.
        submitted.submit(CLOSE);
    }

    private CompletableFuture<Void> enqueue(byte[] payload, List<MessageHeader> headers) {
        CompletableFuture<Void> future = new CompletableFuture<>();
        if (closed || connection.isClosed()) {
            inFlight.giveBack();
            future.completeExceptionally(closedFailure(closed));
            return future;
        }
        submitted.submit(new Pending(headers, payload, future));
        return future;
    }

    private ConnectionLostException closedFailure(boolean producerClosed) {
        return new ConnectionLostException(
                (producerClosed ? "producer for queue " : "connection of producer for queue ") + queue + " is closed");
    }

    /** On loop: gives the message its sequence and queues it; writes (without flushing) a batch that is full. */
    private void addOnLoop(Pending pending) {
        if (closedOnLoop || connection.isClosed()) {
            // Raced with close(): the producer or the connection has already let go of its messages.
            fail(pending, closedFailure(closedOnLoop));
            return;
        }
        if (connection.activeChannel() == null && !connection.options().reconnectPolicy().enabled()) {
            // Lost for good: nothing would ever send, confirm or fail this message (Connection fails only
            // the messages unsettled when the connection dropped).
            fail(pending, new ConnectionLostException(
                    "connection of producer for queue " + queue + " was lost and reconnecting is off;"
                    + " the message was not sent"));
            return;
        }
        if (nextSequence < 1) {
            fail(pending, new SluiceException(io.sluice.protocol.ErrorCode.NONE, "", "producer " + producerId + " for queue "
                    + queue + " has used up its sequences: the last, " + Long.MAX_VALUE + ", is taken"
                    + (options.name() == null ? "" : " (stored under the name '" + options.name() + "')")
                    + ", and a sequence past it would not be told apart from a resend; the message was not sent. Publish "
                    + (options.name() == null ? "with a new producer" : "under another producer name")));
            return;
        }
        pending.sequence = nextSequence++; // past Long.MAX_VALUE: Long.MIN_VALUE, used up
        unsettled.add(pending.sequence, pending);
        unsent.add(pending);
        unsentBytes += pending.payload.length;
        if (unsent.size() >= options.maxBatchMessages() || unsentBytes >= options.maxBatchBytes()) {
            wroteUnflushed |= writeUnsentOnLoop();
        }
    }

    /** On loop: writes as many unsent messages as the window allows, in batches, and flushes the channel. */
    void flushOnLoop() {
        boolean wrote = writeUnsentOnLoop() | wroteUnflushed;
        wroteUnflushed = false;
        Channel channel = connection.activeChannel();
        if (wrote && channel != null) {
            channel.flush();
        }
    }

    /**
     * On loop: writes as many unsent messages as the window allows, in batches; true if it wrote any. If building or
     * writing a frame throws, the producer ends ({@link #brokeOnLoop}): the exception thrown out of a send, a flush
     * or a reconnect left its messages unsettled for ever and broke off whatever the network thread was doing.
     */
    private boolean writeUnsentOnLoop() {
        try {
            return writeUnsentUncheckedOnLoop();
        } catch (RuntimeException e) {
            brokeOnLoop("writing PUBLISH frames", e);
            return false;
        }
    }

    private boolean writeUnsentUncheckedOnLoop() {
        Channel channel = connection.activeChannel();
        if (channel == null || awaitingInit) {
            return false;
        }
        // BLOCKED holds back what was never sent. A message sent before (a resend after a reconnect) goes: the broker
        // confirms it if it stored it, even while blocked (P1, docs/broker-core.md), and refuses it with QUEUE_BLOCKED
        // if not. Held, it would fail after the blocked timeout as "not sent" though it may be stored.
        boolean blocked = flowState == io.sluice.protocol.FlowState.BLOCKED;
        if (blocked && (unsent.isEmpty() || !unsent.peek().sent)) {
            return false;
        }
        int frameLimit = connection.maxFrameBytes() - frameOverheadBytes;
        boolean wrote = false;
        while (!unsent.isEmpty()) {
            PublishFrameBuilder builder = new PublishFrameBuilder(channel.alloc(), queue);
            List<Pending> batch = new ArrayList<>();
            int batchBytes = 0;
            while (!unsent.isEmpty() && batch.size() < options.maxBatchMessages()) {
                Pending next = unsent.peek();
                // Settled while waiting (the broker answered for it), or cancelled by the application: not sent.
                boolean settled = unsettled.get(next.sequence) != next;
                if (settled || next.future.isDone()) {
                    unsent.poll();
                    unsentBytes -= next.payload.length;
                    if (!settled) {
                        unsettled.remove(next.sequence);
                        inFlight.giveBack();
                    }
                    continue;
                }
                if (blocked && !next.sent) {
                    break;
                }
                int size = next.encodedBytes();
                if (size > frameLimit) {
                    unsent.poll();
                    unsentBytes -= next.payload.length;
                    if (unsettled.remove(next.sequence) == null) {
                        continue; // settled already
                    }
                    fail(next, new SluiceException(io.sluice.protocol.ErrorCode.MESSAGE_TOO_LARGE, "", "message of " + size
                            + " encoded bytes to queue " + queue + " exceeds the frame limit of " + frameLimit));
                    continue;
                }
                if (!batch.isEmpty() && (batchBytes + size > frameLimit || batchBytes >= options.maxBatchBytes())) {
                    break;
                }
                // The broker tells a resend from a new message only within a publish window of the highest sequence
                // it stored (SEQUENCE_OUT_OF_WINDOW below it). Messages failed here before they were sent still use
                // up sequences, so the window of unsettled messages alone does not bound that span: a stored message
                // resent after a reconnect would be refused as out of the window. So nothing is sent a
                // window or more above the oldest message still unsettled; it goes once that one is settled.
                if (next.sequence - unsettled.oldestSequence() >= connection.publishWindowMessages()) {
                    break;
                }
                if (!connection.tryTakePublishWindow(size, next.payload.length)) {
                    break;
                }
                unsent.poll();
                unsentBytes -= next.payload.length;
                builder.add(producerId, next.sequence, next.headers, next.payload);
                next.sent = true;
                batch.add(next);
                batchBytes += size;
            }
            if (batch.isEmpty()) {
                builder.discard();
                break;
            }
            PublishFrame frame = builder.build();
            channel.write(frame).addListener(result -> {
                if (!result.isSuccess() && channel.isActive()) {
                    SluiceException failure = new SluiceException("writing a PUBLISH of " + batch.size()
                            + " messages to queue " + queue + " failed: " + result.cause().getMessage(),
                            result.cause());
                    for (Pending failed : batch) {
                        if (unsettled.remove(failed.sequence) != null) {
                            fail(failed, failure);
                        }
                    }
                    removeIfDone();
                }
            });
            wrote = true;
        }
        removeIfDone(); // messages dropped above may have been the last of a closed producer
        return wrote;
    }

    /** On loop. */
    void onConfirmOnLoop(List<IdRange> ranges) {
        List<CompletableFuture<Void>> confirmed = new ArrayList<>();
        for (IdRange range : ranges) {
            unsettled.removeRange(range.from(), range.to(), pending -> confirmed.add(pending.future));
        }
        if (!confirmed.isEmpty()) {
            inFlight.settle(confirmed, null);
        }
        removeIfDone();
    }

    /**
     * On loop. A refusal fails its messages' futures, except NOT_CONFIRMED_SHUTDOWN on a connection that reconnects:
     * the broker is stopping and closes the connection next, so they stay unsettled and are sent again after
     * reconnecting (to the broker restarted, or a cluster's new leader), whose producer table confirms any that was
     * stored after all, as for any publish unconfirmed when a connection drops. Without reconnecting they fail with it.
     */
    void onPublishErrorOnLoop(PublishErrorFrame error) {
        if (error.errorCode() == io.sluice.protocol.ErrorCode.NOT_CONFIRMED_SHUTDOWN && connection.resendsAfterLoss()) {
            return;
        }
        unsettled.removeRange(error.sequences().from(), error.sequences().to(), pending ->
                fail(pending, new SluiceException(error.errorCode(),
                        error.message(), "publish to queue " + queue + " by producer " + producerId + " sequence "
                        + pending.sequence + " failed: " + error.errorCode() + ": " + error.message())));
        removeIfDone();
    }

    /** On loop. */
    void onFlowOnLoop(FlowFrame flow) {
        flowState = flow.state();
        if (flowState == io.sluice.protocol.FlowState.BLOCKED) {
            if (blockedTimer == null) {
                long periodNanos = Math.max(1_000_000L, Math.min(blockedTimeoutNanos / 4, 100_000_000L));
                blockedTimer = connection.scheduleOnLoop(blockedTimerTask(), periodNanos);
            }
        } else {
            if (blockedTimer != null) {
                blockedTimer.cancel(false);
                blockedTimer = null;
            }
            flushOnLoop();
        }
        FlowListener listener = options.flowListener();
        if (listener != null) {
            flowCallbacks.execute(() -> listener.onFlow(flow.queue(), flow.state(), flow.reason()));
        }
    }

    /** On loop, while blocked: fails the unsent messages that have waited longer than the blocked timeout. */
    private void failLongBlockedOnLoop() {
        blockedTimer = null;
        if (flowState != io.sluice.protocol.FlowState.BLOCKED) {
            return;
        }
        long deadline = System.nanoTime() - blockedTimeoutNanos;
        Iterator<Pending> waiting = unsent.iterator();
        while (waiting.hasNext()) {
            Pending expired = waiting.next();
            if (expired.sent) {
                continue; // sent before: it may be stored, and it goes whatever the flow state (writeUnsentUncheckedOnLoop)
            }
            if (expired.enqueuedNanos - deadline >= 0) {
                break;
            }
            waiting.remove();
            unsentBytes -= expired.payload.length;
            if (unsettled.remove(expired.sequence) == null) {
                continue; // settled already
            }
            fail(expired, new SluiceTimeoutException("queue " + queue
                    + " has been blocked by the broker for longer than " + TimeUnit.NANOSECONDS.toMillis(blockedTimeoutNanos)
                    + " ms; the message was not sent"));
        }
        removeIfDone();
        if (closedOnLoop && unsettled.isEmpty()) {
            return; // removed: nothing left to fail
        }
        long periodNanos = Math.max(1_000_000L, Math.min(blockedTimeoutNanos / 4, 100_000_000L));
        blockedTimer = connection.scheduleOnLoop(blockedTimerTask(), periodNanos);
    }

    /**
     * The blocked timer's tick ({@link #failLongBlockedOnLoop}); one that throws ends the producer, failing its messages,
     * rather than die with the exception and leave its messages waiting, unsent, until the queue is FREE again.
     */
    private OwingTask blockedTimerTask() {
        if (blockedTimerTask == null) {
            blockedTimerTask = connection.owing("the blocked timer of producer " + producerId + " for queue " + queue,
                    "the producer ends, failing its messages", thrown -> endBrokenOnLoop("running its blocked timer", thrown),
                    this::failLongBlockedOnLoop);
        }
        return blockedTimerTask;
    }

    /**
     * On loop: queues every unsettled message again, in sequence order, and sends them; a named producer
     * first resumes its epoch on the new connection, and sends once the broker has answered.
     */
    void onReconnectedOnLoop() {
        // The broker reconnected to tells the queue's state when this producer first publishes there, unless it is
        // FREE; a BLOCKED heard from the old connection would hold everything back for good, as no change follows.
        flowState = io.sluice.protocol.FlowState.FREE;
        if (blockedTimer != null) {
            blockedTimer.cancel(false);
            blockedTimer = null;
        }
        unsent.clear();
        unsentBytes = 0;
        unsettled.forEach(pending -> {
            unsent.add(pending);
            unsentBytes += pending.payload.length;
        });
        if (options.name() != null) {
            if (epoch == 0) {
                return; // never registered: its first PRODUCER_INIT goes after this handshake (NamedProducerRegistrations)
            }
            awaitingInit = true;
            resumeOnLoop(++resumes, Connection.RETRY_FIRST_DELAY_NANOS);
            return;
        }
        flushOnLoop();
    }

    /**
     * On loop: asks the broker to resume this named producer's epoch, for the {@code attempt}-th reconnect. A refusal
     * that may pass (no answer in time, or a retriable code such as RESOURCE_LIMIT: the broker's named producers at
     * their bound) is asked again after {@code delayNanos}, doubling up to {@link Connection#RETRY_MAX_DELAY_NANOS},
     * while the messages wait, as a consumer's SUBSCRIBE is; a later reconnect starts its own attempt and ends this one.
     */
    private void resumeOnLoop(long attempt, long delayNanos) {
        // The answer is taken as a frame and cast on the network thread, so that what taking it throws (a broker that
        // answers with another frame than PRODUCER_OK too) ends the producer, failing what waits for it, rather than go
        // to Netty's log, or stay in a future nobody reads, while the messages wait for good.
        connection.requestSender().<Frame>requestFor(initFrame(epoch), initDescription())
                .whenComplete((answer, failure) -> connection.executeOnLoop(() -> {
                    try {
                        resumeAnsweredOnLoop(attempt, delayNanos, answer, failure);
                    } catch (RuntimeException e) {
                        brokeOnLoop("taking the answer to its resume after a reconnect", e);
                    }
                }));
    }

    /** On loop: the answer to the {@code attempt}-th resume, or its failure. */
    private void resumeAnsweredOnLoop(long attempt, long delayNanos, Frame answer, Throwable failure) {
        if (!resumeWantedOnLoop(attempt)) {
            return;
        }
        if (failure == null) {
            initializedOnLoop((ProducerOkFrame) answer);
            return;
        }
        Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
                ? failure.getCause() : failure;
        // A producer the application closed is not kept trying (it holds its name meanwhile, and a resume the
        // broker keeps refusing would keep it for the connection's life): refused once, its messages fail.
        if (!closedOnLoop && (cause instanceof SluiceTimeoutException || cause instanceof SluiceException refused
                && refused.retriable() && !(cause instanceof ConnectionLostException))) {
            LOG.warn("Resuming producer '{}' on queue {} after reconnecting failed ({}); trying again in {} ms.", options.name(),
                    queue, cause.getMessage(), TimeUnit.NANOSECONDS.toMillis(delayNanos));
            // A retry that throws ends the producer: its messages would otherwise wait for the resume for good.
            connection.scheduleOnLoop(connection.owing("the retry of producer '" + options.name() + "''s resume on queue " + queue,
                    "the producer ends, failing its messages", thrown -> endBrokenOnLoop("resuming after a reconnect", thrown), () -> {
                        if (resumeWantedOnLoop(attempt)) {
                            resumeOnLoop(attempt, Math.min(2 * delayNanos, Connection.RETRY_MAX_DELAY_NANOS));
                        }
                    }), delayNanos);
            return;
        }
        failResumeOnLoop(cause);
    }

    /**
     * On loop: whether the {@code attempt}-th resume still matters: no later reconnect started its own, and messages
     * wait for it. A producer the application closed keeps its unsettled messages (see {@link #close()}), which go
     * once it has resumed: dropping the answer for a producer closed while its resume was under way would hold its
     * messages back for good, their futures never completed.
     */
    private boolean resumeWantedOnLoop(long attempt) {
        return attempt == resumes && !(closedOnLoop && unsettled.isEmpty());
    }

    /** On loop: the broker registered this named producer's instance; what it holds back may go. */
    void initializedOnLoop(ProducerOkFrame ok) {
        boolean first = epoch == 0;
        epoch = ok.epoch();
        if (first) {
            lastStoredSequence = ok.lastSequence();
            nextSequence = ok.lastSequence() == Long.MAX_VALUE ? Long.MIN_VALUE // used up
                    : Math.max(nextSequence, ok.lastSequence() + 1);
        }
        awaitingInit = false;
        flushOnLoop();
    }

    /**
     * On loop: resuming on a new connection failed for good. Lost again, the messages wait for the next reconnect;
     * refused for a reason that will not pass (fenced: a newer instance registered under the name; the queue is gone),
     * every unsettled message fails with that reason and the producer is closed.
     */
    private void failResumeOnLoop(Throwable cause) {
        if (cause instanceof ConnectionLostException) {
            return;
        }
        SluiceException reason = cause instanceof SluiceException sluice ? sluice
                : new SluiceException("resuming producer '" + options.name() + "' failed: " + cause, cause);
        closed = true;
        closedOnLoop = true;
        failAll(reason);
        removeIfDone();
    }

    /**
     * On loop: runs {@code step} for each of a connection's producers; one that throws ends on its own
     * ({@link #brokeOnLoop}) while the others, and the caller (a handshake, a PUBLISH_CREDIT), go on. Thrown on, one
     * producer's exception would stop the loop, close the connection and, in a handshake, every reconnect after it.
     */
    static void eachOnLoop(Collection<Producer> producers, String what, java.util.function.Consumer<Producer> step) {
        for (Producer producer : List.copyOf(producers)) {
            try {
                step.accept(producer);
            } catch (RuntimeException e) {
                producer.brokeOnLoop(what, e);
            }
        }
    }

    /**
     * On loop: {@code what} threw {@code e} for this producer, a defect (createProducer refuses what the frames cannot
     * carry): it is closed, every unsettled message fails with a {@link SluiceException} whose cause is {@code e}, and
     * it leaves the connection.
     */
    private void brokeOnLoop(String what, RuntimeException e) {
        LOG.error("{}", endBrokenOnLoop(what, e).getMessage(), e);
    }

    /** {@link #brokeOnLoop} without its log line, for work whose failure is logged already ({@link OwingTask}); returns why. */
    private SluiceException endBrokenOnLoop(String what, Throwable e) {
        SluiceException reason = new SluiceException("producer " + producerId + " for queue " + queue + " failed "
                + what + " and was closed: " + e, e);
        closed = true;
        closedOnLoop = true;
        failAll(reason);
        removeIfDone();
        return reason;
    }

    /** On loop: fails every unsettled message, in one task where callbacks run. */
    void failAll(SluiceException failure) {
        List<CompletableFuture<Void>> failed = new ArrayList<>();
        unsettled.forEach(pending -> failed.add(pending.future));
        if (!failed.isEmpty()) {
            inFlight.settle(failed, failure);
        }
        unsettled.clear();
        unsent.clear();
        unsentBytes = 0;
    }

    /** Settles a message that will not be confirmed: frees its slot and fails its future where callbacks run. */
    private void fail(Pending pending, Throwable failure) {
        inFlight.settle(List.of(pending.future), failure);
    }

    /**
     * On loop: a closed producer with nothing unsettled leaves the connection, and stops its blocked timer (which would
     * otherwise go on every 100 ms for the connection's life, since a producer no longer registered hears no FLOW).
     * Only this producer is removed: a new one of the same name (the same id) may have registered since.
     */
    private void removeIfDone() {
        if (closedOnLoop && unsettled.isEmpty()) {
            if (blockedTimer != null) {
                blockedTimer.cancel(false);
                blockedTimer = null;
            }
            connection.removeProducer(producerId, this);
        }
    }

    /** Takes the submitted messages on the network thread. */
    private final class Submissions implements LoopBatcher.Sink<Pending> {
        @Override
        public void onLoop(Pending pending) {
            if (pending == CLOSE) {
                closedOnLoop = true;
                removeIfDone();
            } else {
                addOnLoop(pending);
            }
        }

        @Override
        public void endOfBatch() {
            flushOnLoop();
        }

        @Override
        public void rejected(Pending pending) {
            if (pending != CLOSE) {
                inFlight.giveBack();
                pending.future.completeExceptionally(connection.closedException());
            }
        }
    }

    /** One message between sendAsync and its settlement. */
    private static final class Pending {
        private final List<MessageHeader> headers;
        private final byte[] payload;
        private final CompletableFuture<Void> future;
        private final long enqueuedNanos = System.nanoTime();
        /** Computed by the sending thread ({@link OutgoingHeaders#encodedMessageBytes}). */
        private final int encodedBytes;
        private long sequence;
        /** On loop: written in a PUBLISH once at least (it may be stored); a resend after a reconnect is not "unsent". */
        private boolean sent;

        Pending(List<MessageHeader> headers, byte[] payload, CompletableFuture<Void> future) {
            this.headers = headers;
            this.payload = payload;
            this.future = future;
            this.encodedBytes = OutgoingHeaders.encodedMessageBytes(headers, payload);
        }

        int encodedBytes() {
            return encodedBytes;
        }
    }
}
