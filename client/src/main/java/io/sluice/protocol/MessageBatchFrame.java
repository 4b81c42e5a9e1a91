package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * A frame whose body ends with a run of encoded messages held in a buffer, so {@link FrameEncoder} can write
 * the prefix into a small buffer and pass the messages on without copying them.
 */
sealed interface MessageBatchFrame permits PublishFrame, TxPublishFrame, DeliverFrame {

    /** Writes the body fields before the messages. */
    void encodeBatchPrefix(ByteBuf out);

    /** The encoded messages, exactly the bytes after the prefix. */
    ByteBuf content();
}
