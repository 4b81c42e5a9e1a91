package io.sluice.broker.net;

/**
 * The publish window of one connection as the broker counts it: the messages and payload bytes of
 * the PUBLISH frames read from it and not yet given back by PUBLISH_CREDIT, against the window of
 * HELLO_OK ({@code broker.publish-window-messages}, {@code broker.publish-window-bytes}).
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
    private long messagesOut;
    private long bytesOut;

    PublishWindow(long maxMessages, long maxBytes) {
        this.maxMessages = maxMessages;
        this.maxBytes = maxBytes;
    }

    /** A PUBLISH frame of {@code messages} carrying {@code payloadBytes} was read. */
    void take(int messages, long payloadBytes) {
        messagesOut += messages;
        bytesOut += payloadBytes;
    }

    /** A PUBLISH_CREDIT for that much is being written. */
    void giveBack(int messages, long payloadBytes) {
        messagesOut -= messages;
        bytesOut -= payloadBytes;
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
