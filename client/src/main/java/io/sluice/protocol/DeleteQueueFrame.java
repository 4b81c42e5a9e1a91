package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * DELETE_QUEUE (0x11, client to broker): deletes a queue and every message in it. Answered by OK or ERROR.
 *
 * <pre>
 * int64 requestId | string queue
 * </pre>
 */
public record DeleteQueueFrame(long requestId, String queue) implements Frame {
    public DeleteQueueFrame {
        WireFormat.checkString("queue", queue);
    }

    @Override
    public FrameType type() {
        return FrameType.DELETE_QUEUE;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(requestId);
        WireFormat.writeString(out, queue);
    }

    static DeleteQueueFrame decodeBody(BodyReader reader) {
        return new DeleteQueueFrame(reader.readLong("requestId"), reader.readString("queue"));
    }
}
