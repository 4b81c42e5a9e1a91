package io.sluice.client;

import io.netty.channel.Channel;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.client.internal.IdRanges;
import io.sluice.client.internal.LoopBatcher;
import io.sluice.client.internal.OwingTask;
import io.sluice.client.internal.SerialExecutor;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.CreditFrame;
import io.sluice.protocol.DeliverCursor;
import io.sluice.protocol.DeliverFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.UnsubscribeFrame;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One subscription to a queue, push (a {@link MessageHandler} called in delivery order on a dispatch thread)
 * or pull ({@link #receive(Duration)}). Thread-safe.
 *
 * <p>Credit: the broker may deliver {@link ConsumerOptions#credit()} messages ahead; once an eighth of that has been
 * settled (acked or nacked) the consumer sends CREDIT for the settled count, with the ACK that settles them
 * (topping up at half left the broker waiting for credit often enough to double W1's p99; docs/performance.md). Acks are merged into ranges and
 * written when {@link ConsumerOptions#ackBatchSize()} are pending or {@link ConsumerOptions#ackFlushDelay()}
 * after the first; a NACK first writes the pending acks, then itself, so the broker sees settlements in order.
 * Settlements reach the network thread through a lock-free queue drained in bursts, one loop task and one
 * channel flush per burst. A handler gets one dispatch task per DELIVER frame, which handles its messages in order.
 * Messages delivered before a reconnect cannot be settled after it (the broker requeued them): their acks are
 * dropped, and those not yet handed to the application are not handed to it (receive or the handler). A message acknowledged in a {@link Transaction} goes out in the transaction's TX_ACK, never in this
 * consumer's ACKs, and counts as settled for the credit once that TX_ACK is written. {@link #close()} writes the
 * settlements made before it ahead of its UNSUBSCRIBE; settling a message after close(), after
 * {@link Connection#close()}, or once the consumer ended on its own ({@link #failure()}), throws
 * {@link IllegalStateException} (the broker takes the message back), and one made while close() runs is dropped.
 *
 * <p>End: a consumer ends when the application closes it ({@link #close()}: {@link #receive} then throws
 * {@link IllegalStateException}) or on its own, when it can receive nothing more ({@link #failure()} says why and
 * {@link #receive} throws that): after a reconnect the broker refused to subscribe it again for good; writing its acks
 * failed (it then unsubscribes, so the broker takes its unacked messages back); its connection was lost and
 * reconnecting is off; or its connection was closed ({@link Connection#close()}). The last two fail with
 * {@link ConnectionLostException}. A {@link #receive} waiting when the consumer ends returns at once and throws the
 * same, and a handler is not called any more, not even for the messages of a DELIVER it was part way through.
 */
public final class Consumer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Consumer.class);
    /** Put in {@link #received} when the consumer ends, to wake the {@link #receive} calls waiting; never returned. */
    private static final Message ENDED = new Message(null, 0, -1, 0, List.of(), new byte[0]);

    private final Connection connection;
    private final String queue;
    private final int consumerTag;
    private final ConsumerOptions options;
    private final MessageHandler handler;
    private final SerialExecutor handlerExecutor;
    private final BlockingQueue<Message> received = new LinkedBlockingQueue<>();
    /** Acks ({@link Message}), {@link Nack}s and the {@link CloseMarker}, in call order, for the network thread. */
    private final LoopBatcher<Object> settlements;
    /** The ack flush timer's work, made once; one that throws ends the consumer ({@link #ackFlushFailedOnLoop}). */
    private final OwingTask flushAcksTask;
    private volatile boolean closed;
    /** Completed once the call of {@link #close()} that unsubscribes is done; other calls wait for it. */
    private final CompletableFuture<Void> closeCompleted = new CompletableFuture<>();
    /** Why the consumer ended without {@link #close()} (see {@link #failure()}); null while it runs. */
    private volatile SluiceException failure;
    /**
     * The connection's session this consumer is subscribed on, written on the network thread (at creation and each
     * reconnect), read by the dispatch threads: a message of an older one is not handed to the handler.
     */
    private volatile int liveSession;

    // Owned by the network thread.
    private long[] pendingAcks = new long[64];
    private int pendingAckCount;
    private ScheduledFuture<?> ackFlush;
    private int settledSinceTopUp;
    /** On loop: frames were written during the current drain of settlements and wait for its one flush. */
    private boolean wroteUnflushed;
    /**
     * On loop: {@link #close()}'s marker was taken and the UNSUBSCRIBE follows; a settlement queued behind it (made
     * while close() ran) is dropped, as the broker would answer it ERROR UNKNOWN_CONSUMER once it unsubscribed.
     */
    private boolean closeMarkerTaken;
    /** On loop: the UNSUBSCRIBE was written; a transaction's ack of this consumer's message would follow it. */
    private boolean unsubscribeSent;
    /** On loop: the answer to the UNSUBSCRIBE this consumer sent when it ended on its own ({@link #leaveOnLoop}), or null. */
    private CompletableFuture<Frame> left;

    Consumer(Connection connection, String queue, int consumerTag, ConsumerOptions options, MessageHandler handler) {
        this.connection = connection;
        this.queue = queue;
        this.consumerTag = consumerTag;
        this.options = options;
        this.handler = handler;
        this.handlerExecutor = handler == null ? null : new SerialExecutor(connection.dispatchExecutor());
        this.settlements = new LoopBatcher<>(connection.loopExecutor(), new Settlements());
        this.liveSession = connection.session(); // created on the network thread
        this.flushAcksTask = connection.owing("the ack flush timer of the consumer of " + queue, "the consumer ends with the"
                + " exception", this::ackFlushFailedOnLoop, this::flushAcksOnLoop);
    }

    /**
     * On loop: writing the acks batched for the flush timer threw. They will not be written, and neither will the credit
     * they free, so the broker would deliver no more: the consumer ends, saying why ({@link #failure()}), and leaves the
     * broker ({@link #leaveOnLoop}), which takes back the messages it did not ack.
     */
    private void ackFlushFailedOnLoop(Throwable thrown) {
        pendingAckCount = 0;
        failedOnLoop(new SluiceException("the consumer of queue " + queue + " ended: writing its acks failed on the"
                + " client's network thread: " + thrown, thrown));
        leaveOnLoop();
    }

    /**
     * On loop: this consumer ended on its own while subscribed, so it leaves as a closed one does: it is removed from the
     * connection (no later handshake subscribes it again) and, connected, sends UNSUBSCRIBE, after which the broker
     * delivers nothing more to it, holds none of its credit and takes back every message it did not ack. A later
     * {@link #close()} waits for that UNSUBSCRIBE rather than send another.
     */
    private void leaveOnLoop() {
        if (closeMarkerTaken || unsubscribeSent) {
            return; // close() unsubscribes it
        }
        connection.removeConsumer(this);
        if (connection.activeChannel() != null) {
            left = new CompletableFuture<>();
            sendUnsubscribeOnLoop(left);
            left.whenComplete((answer, unanswered) -> {
                if (unanswered != null) {
                    LOG.debug("Unsubscribing the ended consumer of {} did not get an answer: {}", queue, unanswered.getMessage());
                }
            });
        }
    }

    public String queue() {
        return queue;
    }

    /** The tag naming this subscription on the wire, unique on its connection. */
    public int consumerTag() {
        return consumerTag;
    }

    ConsumerOptions options() {
        return options;
    }

    Connection connection() {
        return connection;
    }

    /**
     * Pull mode: the next delivered message, waiting up to {@code timeout}; {@code null} if none arrived. A call
     * waiting when the consumer ends (see the class comment) returns at once with the exception below. A timeout too
     * long to count in nanoseconds (such as ChronoUnit.FOREVER's) waits for good.
     *
     * @throws IllegalStateException the consumer was created with a handler, or was closed ({@link #close()})
     * @throws SluiceException       the consumer ended on its own: {@link #failure()}, a {@link ConnectionLostException}
     *                               if its connection was lost without reconnecting or closed
     */
    public Message receive(Duration timeout) throws InterruptedException {
        if (handler != null) {
            throw new IllegalStateException("consumer of queue " + queue + " has a handler; receive() is for pull");
        }
        connection.checkMayBlock("Consumer.receive");
        checkReceivable();
        // Saturated: a timeout too long to count in nanoseconds (ChronoUnit.FOREVER's) waits for good; toNanos() threw.
        Message message = received.poll(TimeUnit.NANOSECONDS.convert(timeout), TimeUnit.NANOSECONDS);
        if (message == ENDED) {
            received.add(ENDED); // for the next receive waiting
            checkReceivable();
            throw new IllegalStateException("consumer of queue " + queue + " ended"); // not reached: it ended
        }
        return message;
    }

    /** Throws if this consumer ended: closed by the application, or on its own. */
    private void checkReceivable() {
        if (closed) {
            throw new IllegalStateException("consumer of queue " + queue + " is closed");
        }
        SluiceException ended = failure;
        if (ended != null) {
            throw ended;
        }
        if (connection.isClosed()) {
            throw connection.closedException(); // closing, before the network thread ended this consumer
        }
    }

    /**
     * Why this consumer ended on its own, after which nothing is delivered to it any more and {@link #receive} throws
     * this: after a reconnect the broker refused to subscribe it again for a reason that does not pass by waiting
     * (its queue is gone, its user may no longer consume); or, with a {@link ConnectionLostException}, its connection
     * was lost and reconnecting is off, or it was closed. Null while it runs, and once closed by {@link #close()} if
     * it had not ended before.
     */
    public SluiceException failure() {
        return failure;
    }

    boolean isClosed() {
        return closed;
    }

    /**
     * On loop: this consumer ended on its own (see {@link #failure()}); the {@link #receive} calls waiting return and
     * throw {@code why}. The first reason stays.
     */
    void failedOnLoop(SluiceException why) {
        if (failure == null && !closed) {
            failure = why;
            wakeReceives();
        }
    }

    /** Drops the messages not yet received (the broker requeues them) and wakes every {@link #receive} waiting. */
    private void wakeReceives() {
        received.clear();
        received.add(ENDED);
    }

    /**
     * Writes pending acks, sends UNSUBSCRIBE and waits up to the request timeout for the broker's OK. Messages
     * received but not settled return to the queue on the broker. On the network thread (a handler, with
     * {@link ConnectionOptions#callbacksOnNetworkThread()}) it does the same without waiting. Either way the
     * handler is not called after close(). Called again, or from several threads at once, it unsubscribes once, and
     * each call returns once that is done (on the network thread, without waiting).
     */
    @Override
    public void close() {
        boolean closing;
        synchronized (this) {
            closing = !closed; // once: two threads closing at once would both send UNSUBSCRIBE
            closed = true;
        }
        if (!closing) {
            awaitCloseByAnotherCall();
            return;
        }
        unsubscribe();
    }

    /**
     * Waits, unless on the network thread, for the call of {@link #close()} that unsubscribes, itself bounded by the
     * request timeout, so that no call returns before the broker stopped delivering.
     */
    private void awaitCloseByAnotherCall() {
        if (connection.onNetworkThread()) {
            return;
        }
        try {
            Connection.await(closeCompleted, connection.options().requestTimeout(), "closing the consumer of " + queue);
        } catch (SluiceException e) {
            LOG.debug("Waiting for the consumer of {} to close did not finish: {}", queue, e.getMessage());
        }
    }

    /** The work of {@link #close()}, done by the one call that closes; on the network thread, without waiting. */
    private void unsubscribe() {
        wakeReceives();
        // Behind the settlements made before close(): their acks are written before the UNSUBSCRIBE.
        CompletableFuture<Frame> unsubscribed = new CompletableFuture<>();
        settlements.submit(new CloseMarker(unsubscribed));
        if (connection.onNetworkThread()) {
            unsubscribed.whenComplete((ok, failure) -> {
                if (failure != null) {
                    LOG.debug("Unsubscribing from {} did not get an answer: {}", queue, failure.getMessage());
                }
                connection.removeConsumer(this);
                closeCompleted.complete(null);
            });
            return;
        }
        try {
            Connection.await(unsubscribed, connection.options().requestTimeout(), "UNSUBSCRIBE " + queue);
        } catch (SluiceException e) {
            LOG.debug("Unsubscribing from {} did not get an answer: {}", queue, e.getMessage());
        } finally {
            connection.removeConsumer(this);
            closeCompleted.complete(null);
        }
    }

    /**
     * Refuses to settle a message once the application closed this consumer: the settlement would reach the broker
     * after the UNSUBSCRIBE, which took the message back and no longer knows the consumer (ERROR UNKNOWN_CONSUMER).
     * Likewise once it closed the connection, which took back every message it delivered, or once the consumer ended on
     * its own ({@link #failure()}: its connection lost for good, or its subscription refused after a reconnect, its
     * messages taken back either way). Called before the message counts as settled: such acks and nacks would be
     * written after the UNSUBSCRIBE, or after the connection's end dropped unseen, the caller taking the message for
     * settled.
     */
    void checkSettleable(String operation, long messageId) {
        if (closed) {
            throw new IllegalStateException("cannot " + operation + " message " + messageId + ": its consumer of queue "
                    + queue + " is closed (the broker takes the message back)");
        }
        if (connection.isClosed()) {
            throw new IllegalStateException("cannot " + operation + " message " + messageId + ": the connection of its"
                    + " consumer of queue " + queue + " is closed (the broker takes the message back)");
        }
        SluiceException ended = failure;
        if (ended != null) {
            throw new IllegalStateException("cannot " + operation + " message " + messageId + ": its consumer of queue "
                    + queue + " ended (the broker takes the message back): " + ended.getMessage(), ended);
        }
    }

    void ack(Message message) {
        settlements.submit(message);
    }

    void nack(Message message, NackAction action, long delayMs) {
        settlements.submit(new Nack(message, action, delayMs));
    }

    /** On loop: adds the id to the pending acks; writes them (without flushing) once there are a batch. */
    private void ackOnLoop(Message message) {
        if (message.session() != connection.session() || droppedAfterClose(message)) {
            return;
        }
        if (pendingAckCount == pendingAcks.length) {
            pendingAcks = java.util.Arrays.copyOf(pendingAcks, pendingAckCount * 2);
        }
        pendingAcks[pendingAckCount++] = message.id();
        settledSinceTopUp++;
        if (pendingAckCount >= options.ackBatchSize()) {
            wroteUnflushed |= writeAcksOnLoop();
        } else if (ackFlush == null) {
            ackFlush = connection.scheduleOnLoop(flushAcksTask, options.ackFlushDelay().toNanos());
        }
    }

    /** On loop: writes the pending acks, then the NACK, then any credit due; the drain flushes them. */
    private void nackOnLoop(Nack nack) {
        if (nack.message().session() != connection.session() || droppedAfterClose(nack.message())) {
            return;
        }
        writeAcksOnLoop();
        Channel channel = connection.activeChannel();
        if (channel != null) {
            channel.write(new NackFrame(consumerTag, nack.action(), nack.delayMs(),
                    List.of(IdRange.single(nack.message().id()))));
            wroteUnflushed = true;
        }
        settledSinceTopUp++;
        topUpOnLoop();
    }

    /**
     * On loop: whether {@code message}'s settlement came behind close()'s marker or the UNSUBSCRIBE of a consumer that
     * ended on its own: made meanwhile, it passed {@link #checkSettleable} before and was queued after. The broker takes
     * the message back.
     */
    private boolean droppedAfterClose(Message message) {
        if (closeMarkerTaken || unsubscribeSent) {
            LOG.debug("Dropped the settlement of message {} of queue {}, made while its consumer closed or ended.",
                    message.id(), queue);
        }
        return closeMarkerTaken || unsubscribeSent;
    }

    /** On loop: the UNSUBSCRIBE was written, so the broker took back every message it delivered to this consumer. */
    boolean unsubscribeSentOnLoop() {
        return unsubscribeSent;
    }

    /**
     * On loop: a transaction wrote a TX_ACK of {@code count} of this consumer's messages, which frees their
     * credit on the broker as an ACK does; they count as settled for the top-up, written after the TX_ACK.
     */
    void onTransactionalAckOnLoop(int count) {
        settledSinceTopUp += count;
        topUpOnLoop();
    }

    /** On loop: copies each message out of the frame, which is released after this returns. */
    void onDeliverOnLoop(DeliverFrame frame) {
        if (closed || failure != null) {
            return; // ended: unsettled, the broker requeues them (after the UNSUBSCRIBE, or with the connection)
        }
        int session = connection.session();
        DeliverCursor cursor = frame.cursor();
        Message[] batch = handler == null ? null : new Message[cursor.messageCount()];
        int count = 0;
        while (cursor.next()) {
            byte[] payload = new byte[cursor.payloadLength()];
            cursor.payload().getBytes(0, payload);
            Message message = new Message(this, session, cursor.messageId(), cursor.deliveryCount(),
                    cursor.headers(), payload);
            if (handler == null) {
                received.add(message);
            } else {
                batch[count++] = message;
            }
        }
        if (count > 0) {
            // One dispatch task per frame, not per message.
            int delivered = count;
            handlerExecutor.execute(() -> {
                for (int i = 0; i < delivered; i++) {
                    handle(batch[i]);
                }
            });
        }
    }

    /** On loop: the new connection starts with fresh credit and no acks for the old one. */
    void onReconnectedOnLoop() {
        liveSession = connection.session();
        pendingAckCount = 0;
        settledSinceTopUp = 0;
        if (!closed && failure == null) {
            received.clear(); // ended, it keeps the marker that wakes receive()
            if (closed) {
                received.add(ENDED); // closed between the check and the clear, which took close()'s marker
            }
        }
    }

    /** On loop. */
    void onConnectionLostOnLoop() {
        liveSession = -1; // no session: what the lost one delivered and is not yet handed out goes nowhere (redelivered)
        if (!closed && failure == null) {
            received.clear();
            if (closed) {
                received.add(ENDED);
            }
        }
        pendingAckCount = 0;
        if (ackFlush != null) {
            ackFlush.cancel(false);
            ackFlush = null;
        }
    }

    /**
     * On a dispatch thread: hands {@code message} to the handler unless the consumer ended. Ended on its own (its
     * connection closed or lost for good), it is not called either: the messages of a DELIVER still queued would go
     * to the handler after {@link Connection#close()} had ended the consumer, their acks reaching no broker. Nor is a
     * message of a connection lost before the reconnect that subscribed the consumer
     * again: the broker took it back and delivers it anew, and its ack would be dropped. A pull consumer drops those
     * at the reconnect ({@link #onReconnectedOnLoop}); a handler behind its dispatch tasks would process each twice.
     */
    private void handle(Message message) {
        if (closed || failure != null || message.session() != liveSession) {
            return; // unsettled: the broker requeues it when the UNSUBSCRIBE arrives, or with the connection
        }
        try {
            handler.onMessage(message);
        } catch (Exception | Error e) {
            LOG.warn("The handler of queue {} failed on message {}; it stays unsettled: {}", queue, message.id(),
                    e.toString());
        }
    }

    /**
     * For {@link Connection#close()}: completes once the acks and nacks settled before this call are written and
     * flushed (they are batched up to the ack flush delay), so that closing the connection does not drop them.
     */
    CompletableFuture<Void> writeSettlements() {
        CompletableFuture<Void> written = new CompletableFuture<>();
        settlements.submit(new FlushMarker(written));
        return written;
    }

    /**
     * On loop: writes the UNSUBSCRIBE; its answer completes {@code unsubscribed} where callbacks run. A transaction's
     * acks of this consumer still batched are written first: after the UNSUBSCRIBE the broker would have taken those
     * messages back, and the TX_ACK would abort the transaction. An ack made in a transaction after this is refused
     * by the transaction ({@link #unsubscribeSentOnLoop}).
     */
    private void sendUnsubscribeOnLoop(CompletableFuture<Frame> unsubscribed) {
        connection.transactions().consumerUnsubscribingOnLoop(this);
        unsubscribeSent = true;
        connection.requestSender()
                .requestNowOnLoop(id -> new UnsubscribeFrame(id, consumerTag), "UNSUBSCRIBE " + queue, unsubscribed);
    }

    /**
     * On loop: close() of a consumer that ended on its own, which is subscribed no more (it left, or its connection did,
     * or the broker refused it): no UNSUBSCRIBE, and the close completes once the one it left with, if any, is answered.
     */
    private void endedCloseOnLoop(CompletableFuture<Frame> unsubscribed) {
        if (left == null) {
            unsubscribed.complete(null);
        } else {
            left.whenComplete((answer, unanswered) -> unsubscribed.complete(answer));
        }
    }

    /** On loop: writes the pending acks, and any credit due, and flushes the channel. */
    private void flushAcksOnLoop() {
        if (writeAcksOnLoop()) {
            connection.activeChannel().flush();
        }
    }

    /** On loop: writes the pending acks and any credit due, without flushing; true if it wrote. */
    private boolean writeAcksOnLoop() {
        if (ackFlush != null) {
            ackFlush.cancel(false);
            ackFlush = null;
        }
        Channel channel = connection.activeChannel();
        if (pendingAckCount == 0 || channel == null) {
            return false;
        }
        channel.write(new AckFrame(consumerTag, IdRanges.of(pendingAcks, pendingAckCount)));
        pendingAckCount = 0;
        topUpOnLoop();
        return true;
    }

    /** On loop: writes a CREDIT, without flushing, once an eighth of the credit has been settled. */
    private void topUpOnLoop() {
        Channel channel = connection.activeChannel();
        if (closed || unsubscribeSent || channel == null || settledSinceTopUp < Math.max(1, options.credit() / 8)) {
            return;
        }
        flushPendingAcksBeforeCredit(channel);
        channel.write(new CreditFrame(consumerTag, settledSinceTopUp));
        settledSinceTopUp = 0;
    }

    /** Rule: a CREDIT never overtakes the ACKs of the messages it replaces. */
    private void flushPendingAcksBeforeCredit(Channel channel) {
        if (pendingAckCount > 0) {
            channel.write(new AckFrame(consumerTag, IdRanges.of(pendingAcks, pendingAckCount)));
            pendingAckCount = 0;
        }
    }

    /** Takes the settlements on the network thread, in the order they were made. */
    private final class Settlements implements LoopBatcher.Sink<Object> {
        @Override
        public void onLoop(Object settlement) {
            if (settlement instanceof Message message) {
                ackOnLoop(message);
            } else if (settlement instanceof Nack nack) {
                nackOnLoop(nack);
            } else if (settlement instanceof FlushMarker marker) {
                flushAcksOnLoop();
                marker.written().complete(null);
            } else if (settlement instanceof CloseMarker marker) {
                if (failure != null) {
                    closeMarkerTaken = true;
                    endedCloseOnLoop(marker.unsubscribed());
                    return;
                }
                flushAcksOnLoop();
                closeMarkerTaken = true;
                // In a task of its own, behind the transactions' work queued before it: an ack in a transaction made
                // before close() may reach this thread after the marker when the consumer's settlements were queued
                // first; it is batched, and written with the others just ahead of the UNSUBSCRIBE, which it must not
                // follow.
                connection.runOnLoop(() -> sendUnsubscribeOnLoop(marker.unsubscribed()), marker.unsubscribed());
            }
        }

        @Override
        public void endOfBatch() {
            Channel channel = connection.activeChannel();
            if (wroteUnflushed && channel != null) {
                channel.flush();
            }
            wroteUnflushed = false;
        }

        @Override
        public void rejected(Object settlement) {
            // The connection is closed: the broker requeues unsettled messages, so acks and nacks are moot.
            if (settlement instanceof CloseMarker marker) {
                marker.unsubscribed().completeExceptionally(connection.closedException());
            } else if (settlement instanceof FlushMarker marker) {
                marker.written().complete(null);
            }
        }
    }

    private record Nack(Message message, NackAction action, long delayMs) {
    }

    /** Queued by {@link #writeSettlements()}; completes once the acks settled before it are written and flushed. */
    private record FlushMarker(CompletableFuture<Void> written) {
    }

    /**
     * Queued by {@link #close()}, ahead of its UNSUBSCRIBE, whose answer completes {@code unsubscribed}: any frame the
     * broker answered with. Typed OK, the close's continuation on the network thread would cast it as it was entered,
     * and what that threw (another frame than OK) would stay where nobody looks: the consumer would stay on the
     * connection, and every other close() would wait out its timeout.
     */
    private record CloseMarker(CompletableFuture<Frame> unsubscribed) {
    }
}
