package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * PURGE_QUEUE (0x12, client to broker): removes every ready message of a queue; OK carries how many were removed. Answered by OK or ERROR.
 *
 * <pre>
 * int64 requestId | string queue
 * </pre>
 */
public record PurgeQueueFrame(long requestId, String queue) implements Frame {
    public PurgeQueueFrame {
        WireFormat.checkString("queue", queue);
    }

    @Override
    public FrameType type() {
        return FrameType.PURGE_QUEUE;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(requestId);
        WireFormat.writeString(out, queue);
    }

    static PurgeQueueFrame decodeBody(BodyReader reader) {
        return new PurgeQueueFrame(reader.readLong("requestId"), reader.readString("queue"));
    }
}
