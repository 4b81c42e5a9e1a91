package io.sluice.broker.queue;

import io.sluice.storage.StoredMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;

/**
 * A queue's dispatch: while a consumer has credit and its connection can take more, takes the next
 * message from the {@link DeliveryOrder}, puts it in flight with that consumer and adds it to the
 * consumer's DELIVER frame ({@link DeliveryFrames}), choosing consumers round-robin. Keeps D1 (one
 * credit unit per delivery), D2 (the order's order) and D3 (counts recorded before frames go out);
 * a message about to exceed {@code maxDeliveries} goes to the dead-letter queue instead. Owns the
 * round-robin position and the frames of the dispatch running; the queue owns the consumers and
 * says when to dispatch. Confined to the queue's executor.
 */
final class Dispatcher {
    private static final Logger LOG = LoggerFactory.getLogger(Dispatcher.class);

    /** Where a message goes that one more delivery would take past {@code maxDeliveries}. */
    interface OverDelivered {
        void deadLetter(StoredMessage message, int deliveries, String reason);
    }

    private final String queue;
    private final DeliveryOrder order;
    /** The queue's tracked messages: a message put in flight is tracked. */
    private final IdSet tracked;
    private final DeliveryFrames frames;
    private final OverDelivered overDelivered;
    private int nextConsumer;

    Dispatcher(String queue, DeliveryOrder order, IdSet tracked, DeliveryFrames frames, OverDelivered overDelivered) {
        this.queue = queue;
        this.order = order;
        this.tracked = tracked;
        this.frames = frames;
        this.overDelivered = overDelivered;
    }

    /**
     * Delivers what it can to {@code consumers} and sends the frames; returns the messages delivered.
     * A storage failure ends the dispatch early: what it had built still goes out, and what it had
     * not yet taken stays where it was.
     */
    int dispatch(List<ConsumerSession> consumers, int maxDeliveries) {
        long now = System.nanoTime();
        int delivered = 0;
        try {
            while (true) {
                ConsumerSession consumer = nextConsumerWithCredit(consumers);
                if (consumer == null) {
                    break;
                }
                StoredMessage message = order.next();
                if (message == null) {
                    break;
                }
                int count = message.deliveryCount() + 1;
                if (count > maxDeliveries) {
                    overDelivered.deadLetter(message, message.deliveryCount(), "delivered " + message.deliveryCount()
                            + " times without an acknowledgement (max-deliveries " + maxDeliveries + ")");
                    continue;
                }
                delivered++;
                consumer.credit--;
                consumer.inFlight.put(message.id(), now, message.headersLength() + message.payloadLength(),
                        message.timestampMillis());
                tracked.add(message.id());
                frames.add(consumer, message, count);
            }
        } catch (RuntimeException e) {
            // A corrupt record is discarded by the store, not thrown: this is the store failing.
            LOG.error("Queue '{}': a dispatch failed; what it had built is sent, the rest waits for the next one.", queue, e);
        } finally {
            frames.send(consumers);
        }
        return delivered;
    }

    private ConsumerSession nextConsumerWithCredit(List<ConsumerSession> consumers) {
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
}
