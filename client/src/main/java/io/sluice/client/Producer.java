package io.sluice.client;

import io.netty.channel.Channel;
import io.sluice.client.internal.SerialExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.protocol.FlowFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.MessageHeader;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Publishes to one queue under a random producerId with sequences 1, 2, 3, ... in send order. Thread-safe.
 *
 * <p>Batching: messages are handed to the network thread, which writes them as one PUBLISH frame when the
 * batch reaches {@link ProducerOptions#maxBatchMessages()} or {@link ProducerOptions#maxBatchBytes()}, or at
 * the end of its current turn, and never beyond the broker's publish window or maxFrameBytes.
 *
 * <p>Back-pressure: at most {@link ProducerOptions#maxInFlight()} messages are unsettled; {@link #sendAsync}
 * blocks its caller until one settles. A CONFIRM completes futures; a PUBLISH_ERROR fails exactly the
 * messages it names with a {@link SluiceException} carrying the broker's code. Futures complete on a dispatch
 * thread. While the connection is down, unsettled messages wait and are resent after reconnecting (see
 * {@link Connection}).
 */
public final class Producer implements AutoCloseable {
    /** producerId, sequence and the two length fields of a PUBLISH message. */
    private static final int MESSAGE_OVERHEAD_BYTES = 24;

    private final Connection connection;
    private final String queue;
    private final long producerId;
    private final ProducerOptions options;
    private final Semaphore inFlight;
    /** Frame header, queue name and messageCount: the bytes of a PUBLISH frame besides its messages. */
    private final int frameOverheadBytes;
    /** Keeps FLOW notifications in the order the broker sent them. */
    private final SerialExecutor flowCallbacks;
    private volatile boolean closed;

    // Owned by the network thread.
    private long nextSequence = 1;
    private final TreeMap<Long, Pending> unsettled = new TreeMap<>();
    private final ArrayDeque<Pending> unsent = new ArrayDeque<>();
    private long unsentBytes;
    private boolean flushScheduled;
    /** On loop: the queue's flow state as the broker last told it; BLOCKED holds every unsent message back. */
    private io.sluice.protocol.FlowState flowState = io.sluice.protocol.FlowState.FREE;
    private ScheduledFuture<?> blockedTimer;

    Producer(Connection connection, String queue, ProducerOptions options) {
        this.connection = connection;
        this.queue = Objects.requireNonNull(queue, "queue");
        this.options = Objects.requireNonNull(options, "options");
        this.producerId = ThreadLocalRandom.current().nextLong();
        this.inFlight = new Semaphore(options.maxInFlight());
        this.flowCallbacks = new SerialExecutor(connection::dispatch);
        this.frameOverheadBytes = 6 + 2 + queue.getBytes(StandardCharsets.UTF_8).length + 4;
    }

    public String queue() {
        return queue;
    }

    /** The random id that, with the sequence, names each message to the broker. */
    public long producerId() {
        return producerId;
    }

    /** Sends a message without headers; see {@link #sendAsync(byte[], List)}. */
    public CompletableFuture<Void> sendAsync(byte[] payload) {
        return sendAsync(payload, List.of());
    }

    /** Sends a message with string headers, UTF-8 encoded, in the map's iteration order. */
    public CompletableFuture<Void> sendAsync(byte[] payload, Map<String, String> headers) {
        return sendAsync(payload, toHeaders(headers));
    }

    /**
     * Sends a message; the future completes when the broker confirmed it durable, or fails with a
     * {@link SluiceException}. Blocks the caller while {@code maxInFlight} messages are unsettled. The payload
     * array must not be changed until the future completes (it is kept for resending).
     */
    public CompletableFuture<Void> sendAsync(byte[] payload, List<MessageHeader> headers) {
        Objects.requireNonNull(payload, "payload");
        Objects.requireNonNull(headers, "headers");
        try {
            inFlight.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return CompletableFuture.failedFuture(
                    new SluiceException("interrupted while waiting for room in the in-flight window", e));
        }
        return enqueue(payload, List.copyOf(headers));
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
     * Sends and waits for the confirm. On timeout the message stays in flight and may still be stored.
     *
     * @throws SluiceTimeoutException no confirm (or no room in the in-flight window) within {@code timeout}
     * @throws SluiceException        the broker refused the message
     */
    public void send(byte[] payload, List<MessageHeader> headers, Duration timeout) {
        Objects.requireNonNull(payload, "payload");
        long deadline = System.nanoTime() + timeout.toNanos();
        try {
            if (!inFlight.tryAcquire(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                throw new SluiceTimeoutException("send to queue " + queue + ": " + options.maxInFlight()
                        + " messages were still unconfirmed after " + timeout.toMillis() + " ms");
            }
            CompletableFuture<Void> future = enqueue(payload, List.copyOf(headers));
            future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
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
        closed = true;
        connection.executeOnLoop(() -> {
            if (unsettled.isEmpty()) {
                connection.removeProducer(producerId);
            }
        });
    }

    private CompletableFuture<Void> enqueue(byte[] payload, List<MessageHeader> headers) {
        CompletableFuture<Void> future = new CompletableFuture<>();
        future.whenComplete((ignored, failure) -> inFlight.release());
        if (closed || connection.isClosed()) {
            future.completeExceptionally(new ConnectionLostException(
                    (closed ? "producer for queue " : "connection of producer for queue ") + queue + " is closed"));
            return future;
        }
        Pending pending = new Pending(headers, payload, future);
        connection.runOnLoop(() -> add(pending), future);
        return future;
    }

    private void add(Pending pending) {
        if (connection.activeChannel() == null && !connection.options().reconnectPolicy().enabled()) {
            // Lost for good: nothing would ever send, confirm or fail this message (Connection fails only
            // the messages unsettled when the connection dropped).
            connection.completeOnDispatch(pending.future, null, new ConnectionLostException(
                    "connection of producer for queue " + queue + " was lost and reconnecting is off;"
                    + " the message was not sent"));
            return;
        }
        pending.sequence = nextSequence++;
        unsettled.put(pending.sequence, pending);
        unsent.add(pending);
        unsentBytes += pending.payload.length;
        if (unsent.size() >= options.maxBatchMessages() || unsentBytes >= options.maxBatchBytes()) {
            flushOnLoop();
        } else if (!flushScheduled) {
            flushScheduled = true;
            connection.executeOnLoop(() -> {
                flushScheduled = false;
                flushOnLoop();
            });
        }
    }

    /** On loop: writes as many unsent messages as the window allows, in batches. */
    void flushOnLoop() {
        Channel channel = connection.activeChannel();
        if (channel == null || flowState == io.sluice.protocol.FlowState.BLOCKED) {
            return;
        }
        int frameLimit = connection.maxFrameBytes() - frameOverheadBytes;
        boolean wrote = false;
        while (!unsent.isEmpty()) {
            PublishFrameBuilder builder = new PublishFrameBuilder(channel.alloc(), queue);
            List<Pending> batch = new ArrayList<>();
            int batchBytes = 0;
            while (!unsent.isEmpty() && batch.size() < options.maxBatchMessages()) {
                Pending next = unsent.peek();
                if (next.future.isDone()) {
                    unsent.poll();
                    continue;
                }
                int size = next.encodedBytes();
                if (size > frameLimit) {
                    unsent.poll();
                    unsentBytes -= next.payload.length;
                    unsettled.remove(next.sequence);
                    connection.completeOnDispatch(next.future, null, new SluiceException(
                            io.sluice.protocol.ErrorCode.MESSAGE_TOO_LARGE, "", "message of " + size
                            + " encoded bytes to queue " + queue + " exceeds the frame limit of " + frameLimit));
                    continue;
                }
                if (!batch.isEmpty() && (batchBytes + size > frameLimit || batchBytes >= options.maxBatchBytes())) {
                    break;
                }
                if (!connection.tryTakePublishWindow(next.payload.length)) {
                    break;
                }
                unsent.poll();
                unsentBytes -= next.payload.length;
                builder.add(producerId, next.sequence, next.headers, next.payload);
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
                        unsettled.remove(failed.sequence);
                        connection.completeOnDispatch(failed.future, null, failure);
                    }
                }
            });
            wrote = true;
        }
        if (wrote) {
            channel.flush();
        }
    }

    /** On loop. */
    void onConfirmOnLoop(List<IdRange> ranges) {
        List<CompletableFuture<Void>> confirmed = new ArrayList<>();
        for (IdRange range : ranges) {
            NavigableMap<Long, Pending> settled = unsettled.subMap(range.from(), true, range.to(), true);
            for (Pending pending : settled.values()) {
                confirmed.add(pending.future);
            }
            settled.clear();
        }
        if (!confirmed.isEmpty()) {
            connection.dispatch(() -> confirmed.forEach(future -> future.complete(null)));
        }
        removeIfDone();
    }

    /** On loop. */
    void onPublishErrorOnLoop(PublishErrorFrame error) {
        NavigableMap<Long, Pending> settled =
                unsettled.subMap(error.sequences().from(), true, error.sequences().to(), true);
        for (Pending pending : settled.values()) {
            connection.completeOnDispatch(pending.future, null, new SluiceException(error.errorCode(),
                    error.message(), "publish to queue " + queue + " by producer " + producerId + " sequence "
                    + pending.sequence + " failed: " + error.errorCode() + ": " + error.message()));
        }
        settled.clear();
        removeIfDone();
    }

    /** On loop. */
    void onFlowOnLoop(FlowFrame flow) {
        flowState = flow.state();
        if (flowState == io.sluice.protocol.FlowState.BLOCKED) {
            if (blockedTimer == null) {
                long periodNanos = Math.max(1_000_000L, Math.min(options.blockedTimeout().toNanos() / 4, 100_000_000L));
                blockedTimer = connection.scheduleOnLoop(this::failLongBlockedOnLoop, periodNanos);
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
        long deadline = System.nanoTime() - options.blockedTimeout().toNanos();
        while (!unsent.isEmpty() && unsent.peek().enqueuedNanos - deadline < 0) {
            Pending expired = unsent.poll();
            unsentBytes -= expired.payload.length;
            unsettled.remove(expired.sequence);
            connection.completeOnDispatch(expired.future, null, new SluiceTimeoutException("queue " + queue
                    + " has been blocked by the broker for longer than " + options.blockedTimeout().toMillis()
                    + " ms; the message was not sent"));
        }
        removeIfDone();
        long periodNanos = Math.max(1_000_000L, Math.min(options.blockedTimeout().toNanos() / 4, 100_000_000L));
        blockedTimer = connection.scheduleOnLoop(this::failLongBlockedOnLoop, periodNanos);
    }

    /** On loop: queues every unsettled message again, in sequence order, and sends them. */
    void onReconnectedOnLoop() {
        unsent.clear();
        unsentBytes = 0;
        for (Pending pending : unsettled.values()) {
            unsent.add(pending);
            unsentBytes += pending.payload.length;
        }
        flushOnLoop();
    }

    /** On loop: fails every unsettled message. */
    void failAll(SluiceException failure) {
        for (Pending pending : unsettled.values()) {
            connection.completeOnDispatch(pending.future, null, failure);
        }
        unsettled.clear();
        unsent.clear();
        unsentBytes = 0;
    }

    private void removeIfDone() {
        if (closed && unsettled.isEmpty()) {
            connection.removeProducer(producerId);
        }
    }

    private static List<MessageHeader> toHeaders(Map<String, String> headers) {
        List<MessageHeader> list = new ArrayList<>(headers.size());
        headers.forEach((key, value) -> list.add(MessageHeader.of(key, value)));
        return list;
    }

    /** One message between sendAsync and its settlement. */
    private static final class Pending {
        private final List<MessageHeader> headers;
        private final byte[] payload;
        private final CompletableFuture<Void> future;
        private final long enqueuedNanos = System.nanoTime();
        private long sequence;

        Pending(List<MessageHeader> headers, byte[] payload, CompletableFuture<Void> future) {
            this.headers = headers;
            this.payload = payload;
            this.future = future;
        }

        int encodedBytes() {
            int bytes = MESSAGE_OVERHEAD_BYTES + payload.length;
            for (MessageHeader header : headers) {
                bytes += 2 + header.key().getBytes(StandardCharsets.UTF_8).length + 4 + header.value().length;
            }
            return bytes;
        }
    }
}
