package io.sluice.broker.queue;

import io.sluice.protocol.Frame;

/** What a queue needs of a client connection: somewhere to write frames. Writes are thread-safe. */
public interface ClientConnection {
    /** Queues a frame for writing; {@link #flush()} sends what was queued. */
    void write(Frame frame);

    void flush();

    /** For log lines: remote address and client name. */
    String describe();

    /**
     * The connection's id (Netty's short channel id): the one key by which the admin API's connections,
     * consumers and producers name a connection, and by which an administrator closes it.
     */
    String id();

    boolean isActive();

    /** The largest frame the client agreed to receive (HELLO_OK). */
    int maxFrameBytes();

    /** False while the connection's outbound buffer is above its high water mark: deliver nothing more to it. */
    boolean isWritable();

    /**
     * Gives the producer back publish window for messages the broker is done with (confirmed or
     * refused): sends PUBLISH_CREDIT and, if reading was paused because the client overran its
     * window, resumes it once the client is back within it. Thread-safe.
     */
    void returnPublishCredit(int messages, long bytes);
}
