package io.sluice.client;

import io.sluice.protocol.MessageHeader;
import io.sluice.protocol.NackAction;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * One delivered message, copied out of the network buffer, so it stays valid after the handler returns.
 * Settle it exactly once with {@link #ack()}, {@link #nack} or {@link Transaction#ack(Message)}. Thread-safe.
 */
public final class Message {
    /** One updater for all messages instead of an AtomicBoolean per delivered message. */
    private static final AtomicIntegerFieldUpdater<Message> SETTLED =
            AtomicIntegerFieldUpdater.newUpdater(Message.class, "settled");

    private final Consumer consumer;
    private final int session;
    private final long id;
    private final int deliveryCount;
    private final List<MessageHeader> headers;
    private final byte[] payload;
    /** 0 until {@link #ack()} or {@link #nack}, then 1. */
    private volatile int settled;

    Message(Consumer consumer, int session, long id, int deliveryCount, List<MessageHeader> headers,
            byte[] payload) {
        this.consumer = consumer;
        this.session = session;
        this.id = id;
        this.deliveryCount = deliveryCount;
        this.headers = headers;
        this.payload = payload;
    }

    /** The broker's id for this delivery, unique within the subscription. */
    public long id() {
        return id;
    }

    /** 1 on the first delivery, more on redeliveries. */
    public int deliveryCount() {
        return deliveryCount;
    }

    public List<MessageHeader> headers() {
        return headers;
    }

    /** The first header with this key as UTF-8 text. */
    public Optional<String> header(String key) {
        for (MessageHeader header : headers) {
            if (header.key().equals(key)) {
                return Optional.of(new String(header.value(), StandardCharsets.UTF_8));
            }
        }
        return Optional.empty();
    }

    /** The payload; the array is this message's own copy and is not copied again. */
    public byte[] payload() {
        return payload;
    }

    /**
     * Tells the broker the message is done. Acks are batched into ranges and written within about 1 ms.
     *
     * @throws IllegalStateException the message was already settled, or its consumer or its connection was closed
     *                               ({@link Consumer#close()}, {@link Connection#close()}), or its consumer ended on
     *                               its own ({@link Consumer#failure()}); the broker takes the message back
     */
    public void ack() {
        consumer.checkSettleable("ack", id);
        markSettled("ack");
        consumer.ack(this);
    }

    /** Hands the message back: requeue, or reject to the dead-letter queue. */
    public void nack(NackAction action) {
        nack(action, Duration.ZERO);
    }

    /**
     * Hands the message back; {@code delay} is used only by {@link NackAction#REQUEUE_AFTER_DELAY} (and may be null
     * for the other actions). The arguments are checked before the message counts as settled, so a refused call
     * leaves it to be settled again.
     *
     * @throws NullPointerException     {@code action} is null, or {@code delay} is null for REQUEUE_AFTER_DELAY
     * @throws IllegalArgumentException {@code delay} is negative, or too long to count in milliseconds
     * @throws IllegalStateException    the message was already settled, or its consumer or its connection was closed,
     *                                  or its consumer ended on its own
     */
    public void nack(NackAction action, Duration delay) {
        Objects.requireNonNull(action, "action");
        long delayMs = action == NackAction.REQUEUE_AFTER_DELAY ? delayMillis(delay) : 0;
        consumer.checkSettleable("nack", id);
        markSettled("nack");
        consumer.nack(this, action, delayMs);
    }

    /**
     * A nack's delay in milliseconds, checked here: a delay the NACK frame refuses would otherwise throw on the
     * network thread after the message was marked settled, unseen by the caller, with the message settled for the
     * application and never for the broker.
     */
    private static long delayMillis(Duration delay) {
        Objects.requireNonNull(delay, "delay");
        if (delay.isNegative()) {
            throw new IllegalArgumentException("delay " + delay + " is negative");
        }
        try {
            return delay.toMillis();
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("delay " + delay + " is too long to count in milliseconds");
        }
    }

    int session() {
        return session;
    }

    /** The consumer that received the message. */
    Consumer consumer() {
        return consumer;
    }

    /** Marks the message settled, once: by {@link #ack()} or {@link #nack}. */
    void markSettled(String operation) {
        if (!SETTLED.compareAndSet(this, 0, 1)) {
            throw new IllegalStateException("cannot " + operation + " message " + id + ": it was already settled");
        }
    }

    /**
     * Marks the message settled, once, by an ack in transaction {@code txnId}. The sentence is built only for a
     * refusal, not for each of the messages a forwarding consumer acks this way.
     */
    void markSettledInTransaction(long txnId) {
        if (!SETTLED.compareAndSet(this, 0, 1)) {
            throw new IllegalStateException("cannot ack in transaction " + txnId + " message " + id
                    + ": it was already settled");
        }
    }

    @Override
    public String toString() {
        return "Message[id=" + id + ", deliveryCount=" + deliveryCount + ", headers=" + headers.size()
                + ", payloadBytes=" + payload.length + "]";
    }
}
