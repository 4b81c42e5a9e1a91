package io.sluice.broker.queue;

import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishCursor;
import io.sluice.protocol.PublishFrame;

import java.util.List;

/**
 * A connection that publishes, as its queues see it: where the queue settles each message (confirmed
 * or refused), gives the publish window back, and tells of a change of its flow state. Thread-safe;
 * each call becomes one frame on the connection, written in call order.
 *
 * <p>Rule W1 (one count of the publish window): the broker counts a connection's publish window in
 * one place, on the connection's side. A queue never counts it; it only says how much of it the
 * messages it is done with held, with {@link #publishCredit}, once per message, each as
 * {@link #windowBytes} measures it.
 *
 * <p>Rule W2 (the broker's own count of what publishes hold): with the same call, at the same place, a queue gives
 * back the headers and payload ({@code headersLength + payloadLength}) of those messages, whatever unit the client's
 * window counts in, so the connection can bound what a client that counts its window in payload bytes has the broker
 * hold (docs/flow-control.md, "Producer credit").
 */
public interface ProducerLink extends ClientConnection {
    /** CONFIRM: these sequences of the producer are stored durably. */
    void confirm(long producerId, List<IdRange> sequences);

    /** PUBLISH_ERROR: these sequences of the producer were not stored and never will be. */
    void refuse(long producerId, IdRange sequences, ErrorCode code, String message);

    /**
     * PUBLISH_CREDIT: gives back the window of messages the broker is done with, confirmed or refused (W1), and the
     * {@code heldBytes}, headers and payload, they held (W2).
     */
    void publishCredit(int messages, long windowBytes, long heldBytes);

    /**
     * What a message of these lengths took from this connection's publish window: its headers and payload, or its
     * payload alone for a client that predates the WINDOW_COUNTS_HEADERS capability (docs/flow-control.md, W1).
     * From any thread.
     */
    int windowBytes(int headersLength, int payloadLength);

    /** FLOW: the queue's flow state changed, for this reason. */
    void flow(String queue, FlowState state, String reason);

    /** Refuses every message of a PUBLISH frame, gives back the window they held (W1, W2) and flushes. */
    default void refuseAll(PublishFrame frame, ErrorCode code, String message) {
        PublishCursor cursor = frame.cursor();
        int messages = 0;
        long bytes = 0;
        long heldBytes = 0;
        while (cursor.next()) {
            refuse(cursor.producerId(), IdRange.single(cursor.sequence()), code, message);
            messages++;
            bytes += windowBytes(cursor.headersLength(), cursor.payloadLength());
            heldBytes += cursor.headersLength() + cursor.payloadLength();
        }
        publishCredit(messages, bytes, heldBytes);
        flush();
    }
}
