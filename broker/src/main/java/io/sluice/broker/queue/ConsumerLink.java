package io.sluice.broker.queue;

import io.sluice.protocol.DeliverFrame;
import io.sluice.protocol.ErrorCode;

/**
 * A connection that consumes, as its queues see it: where deliveries and the errors of its consumer
 * frames go, how large a frame it takes, and whether it can take more now. Thread-safe; each call
 * becomes one frame on the connection, written in call order.
 */
public interface ConsumerLink extends ClientConnection {
    /** DELIVER: hands the frame over; the link releases it once written (or if the connection is gone). */
    void deliver(DeliverFrame frame);

    /**
     * ERROR with no request id: a consumer frame the queue could not apply in full (credit past the
     * connection's limit, an ACK or NACK of ids not outstanding). The connection stays usable.
     */
    void error(ErrorCode code, String message);

    /** The largest frame the client agreed to receive (HELLO_OK). */
    int maxFrameBytes();

    /** False while the connection's outbound buffer is above its high water mark: deliver nothing more to it. */
    boolean isWritable();
}
