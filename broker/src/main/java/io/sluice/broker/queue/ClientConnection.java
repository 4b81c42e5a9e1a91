package io.sluice.broker.queue;

import io.sluice.protocol.Frame;

/** What a queue needs of a client connection: somewhere to write frames. Writes are thread-safe. */
public interface ClientConnection {
    /** Queues a frame for writing; {@link #flush()} sends what was queued. */
    void write(Frame frame);

    void flush();

    /** For log lines: remote address and client name. */
    String describe();

    boolean isActive();
}
