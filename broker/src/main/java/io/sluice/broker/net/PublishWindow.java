package io.sluice.broker.net;

import io.sluice.protocol.PublishCursor;
import io.sluice.protocol.PublishFrame;

/**
 * The publish window of one connection as the broker counts it: the messages and bytes of the PUBLISH
 * frames read from it and not yet given back by PUBLISH_CREDIT, against the window of HELLO_OK
 * ({@code broker.publish-window-messages}, {@code broker.publish-window-bytes}). A message's bytes are its
 * headers and payload for a client granted WINDOW_COUNTS_HEADERS, its payload alone for a client that predates
 * that capability (docs/flow-control.md, "Producer credit"): the unit the client takes in, or the credits given
 * back would not match what it took.
 *
 * <p>Rule W1 of {@link io.sluice.broker.queue.ProducerLink}: this is the broker's only count of it.
 * The {@link ClientSession} takes from it for each PUBLISH frame it reads, the
 * {@link ClientSessionProxy} gives back as it writes each PUBLISH_CREDIT a queue sent; queues only
 * say how much their settled messages held. Confined to the connection's event loop, so what it
 * holds is always what the client has been told, and no thread reads it half-updated.
 */
final class PublishWindow {
    private final long maxMessages;
    private final long maxBytes;
    private final boolean countsHeaders;
    private long messagesOut;
    private long bytesOut;

    PublishWindow(long maxMessages, long maxBytes, boolean countsHeaders) {
        this.maxMessages = maxMessages;
        this.maxBytes = maxBytes;
        this.countsHeaders = countsHeaders;
    }

    /** What a message of these lengths takes from this window. From any thread (it reads a final field). */
    int bytesOf(int headersLength, int payloadLength) {
        return countsHeaders ? headersLength + payloadLength : payloadLength;
    }

    /**
     * What the messages of {@code publish} take from this window, given their headers and payload,
     * {@code messageBytes} ({@link PublishFrame#messageBytes}): that, for a client granted WINDOW_COUNTS_HEADERS.
     */
    long bytesOf(PublishFrame publish, long messageBytes) {
        if (countsHeaders) {
            return messageBytes;
        }
        PublishCursor cursor = publish.cursor();
        long bytes = 0;
        while (cursor.next()) {
            bytes += bytesOf(cursor.headersLength(), cursor.payloadLength());
        }
        return bytes;
    }

    /** A PUBLISH frame of {@code messages} taking {@code bytes} was read. */
    void take(int messages, long bytes) {
        messagesOut += messages;
        bytesOut += bytes;
    }

    /** A PUBLISH_CREDIT for that much is being written. */
    void giveBack(int messages, long bytes) {
        messagesOut -= messages;
        bytesOut -= bytes;
    }

    /** True while the client has no more out than its window allows. */
    boolean within() {
        return messagesOut <= maxMessages && bytesOut <= maxBytes;
    }

    long messagesOut() {
        return messagesOut;
    }

    long bytesOut() {
        return bytesOut;
    }
}
