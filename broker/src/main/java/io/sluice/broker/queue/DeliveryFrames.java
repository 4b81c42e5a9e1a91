package io.sluice.broker.queue;

import io.netty.buffer.ByteBufAllocator;
import io.sluice.protocol.DeliverFrameBuilder;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoredMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * The DELIVER frames of one dispatch: one open frame per consumer, closed before a message that
 * would take it past the size the client agreed to, and the deliveries' counts recorded in the
 * store, under one lock per batch, before any frame carrying them is written (rule D3). Confined to
 * its queue's executor; reused from dispatch to dispatch.
 */
final class DeliveryFrames {
    private static final Logger LOG = LoggerFactory.getLogger(DeliveryFrames.class);
    private static final int MAX_DELIVER_FRAME_BYTES = 256 << 10;
    /** Frame header, consumer tag and message count of a DELIVER frame, rounded up (docs/protocol.md). */
    private static final int DELIVER_FRAME_OVERHEAD_BYTES = 64;
    /** Per message in a DELIVER frame: id, delivery count and the two length prefixes. */
    private static final int DELIVER_MESSAGE_OVERHEAD_BYTES = 24;

    private final String queue;
    private final QueueStore store;
    private final Map<ConsumerSession, DeliverFrameBuilder> open = new IdentityHashMap<>();
    private final FlushList<ConsumerLink> touchedLinks = new FlushList<>();
    /**
     * Deliveries noted and not yet recorded in the store (D3): 16 at first, doubled when full up to
     * {@value #MAX_NOTED}, then recorded. At the full size from the start, the two arrays were 12 KB
     * of heap per queue, most of it never used by a queue that delivers a few messages at a time.
     */
    private long[] ids = new long[16];
    private int[] counts = new int[16];
    private static final int MAX_NOTED = 1024;
    private int noted;

    /** Told of the deliveries each time they are recorded in the store, on the queue's executor (the arrays are reused after). */
    interface Recorded {
        void recorded(long[] ids, int[] counts, int n);
    }

    private final Recorded recorded;

    DeliveryFrames(String queue, QueueStore store) {
        this(queue, store, (ids, counts, n) -> { });
    }

    DeliveryFrames(String queue, QueueStore store, Recorded recorded) {
        this.queue = queue;
        this.store = store;
        this.recorded = recorded;
    }

    /** Adds delivery number {@code count} of {@code message} to {@code consumer}'s frame. */
    void add(ConsumerSession consumer, StoredMessage message, int count) {
        note(message.id(), count);
        // A frame never exceeds the size agreed with the client: close it before a message that would
        // not fit (a single message always fits: max-message-bytes < max-frame-bytes).
        int limit = Math.min(MAX_DELIVER_FRAME_BYTES, consumer.connection.maxFrameBytes() - DELIVER_FRAME_OVERHEAD_BYTES);
        int messageBytes = DELIVER_MESSAGE_OVERHEAD_BYTES + message.headersLength() + message.payloadLength();
        DeliverFrameBuilder frame = open.get(consumer);
        if (frame != null && frame.messageCount() > 0 && frame.encodedBytes() + messageBytes > limit) {
            write(consumer, frame);
        }
        frame = open.computeIfAbsent(consumer, c -> new DeliverFrameBuilder(ByteBufAllocator.DEFAULT, c.tag));
        frame.addEncoded(message.id(), count, message.array(), message.headersOffset(), message.headersLength(),
                message.payloadOffset(), message.payloadLength());
        if (frame.encodedBytes() >= MAX_DELIVER_FRAME_BYTES) {
            write(consumer, frame);
        }
    }

    private void write(ConsumerSession consumer, DeliverFrameBuilder frame) {
        record();
        open.remove(consumer);
        consumer.connection.deliver(frame.build());
    }

    /**
     * Ends the dispatch: records what is noted, writes every open frame and flushes each consumer's
     * connection. If the counts cannot be recorded, D3 forbids sending: the frames are discarded and
     * the deliveries wait in flight for their ack timeout.
     */
    void send(Iterable<ConsumerSession> consumers) {
        try {
            record();
        } catch (RuntimeException e) {
            open.values().forEach(DeliverFrameBuilder::discard);
            open.clear();
            noted = 0;
            LOG.error("Queue '{}': delivery counts could not be recorded; the deliveries wait for their ack timeout.", queue, e);
            return;
        }
        FlushList<ConsumerLink> touched = touchedLinks.begin();
        for (Map.Entry<ConsumerSession, DeliverFrameBuilder> e : open.entrySet()) {
            e.getKey().connection.deliver(e.getValue().build());
            touched.add(e.getKey().connection);
        }
        open.clear();
        for (ConsumerSession c : consumers) {
            touched.add(c.connection);
        }
        touched.flushAll(ConsumerLink::flush);
    }

    private void note(long id, int count) {
        if (noted == ids.length) {
            if (ids.length < MAX_NOTED) {
                ids = Arrays.copyOf(ids, 2 * ids.length);
                counts = Arrays.copyOf(counts, 2 * counts.length);
            } else {
                record();
            }
        }
        ids[noted] = id;
        counts[noted] = count;
        noted++;
    }

    /** Records the noted deliveries under one store lock (instead of one per message). */
    private void record() {
        if (noted > 0) {
            store.recordDeliveries(ids, counts, noted);
            recorded.recorded(ids, counts, noted);
            noted = 0;
        }
    }
}
