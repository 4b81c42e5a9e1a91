package io.sluice.client;

import io.netty.channel.Channel;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.client.internal.IdRanges;
import io.sluice.client.internal.SerialExecutor;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.CreditFrame;
import io.sluice.protocol.DeliverCursor;
import io.sluice.protocol.DeliverFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.UnsubscribeFrame;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One subscription to a queue, push (a {@link MessageHandler} called in delivery order on a dispatch thread)
 * or pull ({@link #receive(Duration)}). Thread-safe.
 *
 * <p>Credit: the broker may deliver {@link ConsumerOptions#credit()} messages ahead; once half of that has been
 * settled (acked or nacked) the consumer sends CREDIT for the settled count. Acks are merged into ranges and
 * written when {@link ConsumerOptions#ackBatchSize()} are pending or {@link ConsumerOptions#ackFlushDelay()}
 * after the first; a NACK first writes the pending acks, then itself, so the broker sees settlements in order.
 * Messages delivered before a reconnect cannot be settled after it (the broker requeued them): their acks are
 * dropped.
 */
public final class Consumer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Consumer.class);

    private final Connection connection;
    private final String queue;
    private final int consumerTag;
    private final ConsumerOptions options;
    private final MessageHandler handler;
    private final SerialExecutor handlerExecutor;
    private final BlockingQueue<Message> received = new LinkedBlockingQueue<>();
    private volatile boolean closed;

    // Owned by the network thread.
    private long[] pendingAcks = new long[64];
    private int pendingAckCount;
    private ScheduledFuture<?> ackFlush;
    private int settledSinceTopUp;

    Consumer(Connection connection, String queue, int consumerTag, ConsumerOptions options, MessageHandler handler) {
        this.connection = connection;
        this.queue = queue;
        this.consumerTag = consumerTag;
        this.options = options;
        this.handler = handler;
        this.handlerExecutor = handler == null ? null : new SerialExecutor(connection.dispatchExecutor());
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

    /**
     * Pull mode: the next delivered message, waiting up to {@code timeout}; {@code null} if none arrived.
     *
     * @throws IllegalStateException the consumer was created with a handler
     */
    public Message receive(Duration timeout) throws InterruptedException {
        if (handler != null) {
            throw new IllegalStateException("consumer of queue " + queue + " has a handler; receive() is for pull");
        }
        return received.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    /**
     * Writes pending acks, sends UNSUBSCRIBE and waits up to the request timeout for the broker's OK. Messages
     * received but not settled return to the queue on the broker.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        connection.executeOnLoop(this::flushAcksOnLoop);
        try {
            Connection.await(connection.request(id -> new UnsubscribeFrame(id, consumerTag),
                    "UNSUBSCRIBE " + queue), connection.options().requestTimeout(), "UNSUBSCRIBE " + queue);
        } catch (SluiceException e) {
            LOG.debug("Unsubscribing from {} did not get an answer: {}", queue, e.getMessage());
        } finally {
            connection.removeConsumer(consumerTag);
            received.clear();
        }
    }

    void ack(Message message) {
        connection.executeOnLoop(() -> {
            if (message.session() != connection.session()) {
                return;
            }
            if (pendingAckCount == pendingAcks.length) {
                pendingAcks = java.util.Arrays.copyOf(pendingAcks, pendingAckCount * 2);
            }
            pendingAcks[pendingAckCount++] = message.id();
            settledSinceTopUp++;
            if (pendingAckCount >= options.ackBatchSize()) {
                flushAcksOnLoop();
            } else if (ackFlush == null) {
                ackFlush = connection.scheduleOnLoop(this::flushAcksOnLoop, options.ackFlushDelay().toNanos());
            }
        });
    }

    void nack(Message message, NackAction action, long delayMs) {
        connection.executeOnLoop(() -> {
            if (message.session() != connection.session()) {
                return;
            }
            flushAcksOnLoop();
            Channel channel = connection.activeChannel();
            if (channel != null) {
                channel.writeAndFlush(new NackFrame(consumerTag, action, delayMs,
                        List.of(IdRange.single(message.id()))));
            }
            settledSinceTopUp++;
            topUpOnLoop();
        });
    }

    /** On loop: copies each message out of the frame, which is released after this returns. */
    void onDeliverOnLoop(DeliverFrame frame) {
        int session = connection.session();
        DeliverCursor cursor = frame.cursor();
        while (cursor.next()) {
            byte[] payload = new byte[cursor.payloadLength()];
            cursor.payload().getBytes(0, payload);
            Message message = new Message(this, session, cursor.messageId(), cursor.deliveryCount(),
                    cursor.headers(), payload);
            if (handler == null) {
                received.add(message);
            } else {
                handlerExecutor.execute(() -> handle(message));
            }
        }
    }

    /** On loop: the new connection starts with fresh credit and no acks for the old one. */
    void onReconnectedOnLoop() {
        pendingAckCount = 0;
        settledSinceTopUp = 0;
        received.clear();
    }

    /** On loop. */
    void onConnectionLostOnLoop() {
        pendingAckCount = 0;
        if (ackFlush != null) {
            ackFlush.cancel(false);
            ackFlush = null;
        }
    }

    private void handle(Message message) {
        try {
            handler.onMessage(message);
        } catch (Exception e) {
            LOG.warn("The handler of queue {} failed on message {}; it stays unsettled: {}", queue, message.id(),
                    e.toString());
        }
    }

    private void flushAcksOnLoop() {
        if (ackFlush != null) {
            ackFlush.cancel(false);
            ackFlush = null;
        }
        Channel channel = connection.activeChannel();
        if (pendingAckCount > 0 && channel != null) {
            channel.write(new AckFrame(consumerTag, IdRanges.of(pendingAcks, pendingAckCount)));
            pendingAckCount = 0;
            topUpOnLoop();
            channel.flush();
        }
    }

    private void topUpOnLoop() {
        Channel channel = connection.activeChannel();
        if (closed || channel == null || settledSinceTopUp < Math.max(1, options.credit() / 2)) {
            return;
        }
        flushPendingAcksBeforeCredit(channel);
        channel.writeAndFlush(new CreditFrame(consumerTag, settledSinceTopUp));
        settledSinceTopUp = 0;
    }

    /** Rule: a CREDIT never overtakes the ACKs of the messages it replaces. */
    private void flushPendingAcksBeforeCredit(Channel channel) {
        if (pendingAckCount > 0) {
            channel.write(new AckFrame(consumerTag, IdRanges.of(pendingAcks, pendingAckCount)));
            pendingAckCount = 0;
        }
    }
}
