package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * UNSUBSCRIBE (0x35, client to broker): stops deliveries to a subscription. Answered by OK once no more
 * DELIVER for the tag will follow; unacknowledged messages return to the queue.
 *
 * <pre>
 * int64 requestId | int32 consumerTag
 * </pre>
 */
public record UnsubscribeFrame(long requestId, int consumerTag) implements Frame {
    @Override
    public FrameType type() {
        return FrameType.UNSUBSCRIBE;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(requestId);
        out.writeInt(consumerTag);
    }

    static UnsubscribeFrame decodeBody(BodyReader reader) {
        return new UnsubscribeFrame(reader.readLong("requestId"), reader.readInt("consumerTag"));
    }
}
