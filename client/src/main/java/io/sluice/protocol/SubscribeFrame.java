package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * SUBSCRIBE (0x30, client to broker): starts consuming a queue under a consumer tag the client picked
 * (unique on the connection). Answered by OK or ERROR; deliveries follow as credit allows.
 *
 * <pre>
 * int64 requestId | int32 consumerTag | string queue | int32 initialCredit (&gt;= 0)
 * </pre>
 * Credit counts messages: the broker sends at most that many before CREDIT adds more.
 */
public record SubscribeFrame(long requestId, int consumerTag, String queue, int initialCredit) implements Frame {
    public SubscribeFrame {
        WireFormat.checkString("queue", queue);
        WireFormat.checkNonNegative("initialCredit", initialCredit);
    }

    @Override
    public FrameType type() {
        return FrameType.SUBSCRIBE;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(requestId);
        out.writeInt(consumerTag);
        WireFormat.writeString(out, queue);
        out.writeInt(initialCredit);
    }

    static SubscribeFrame decodeBody(BodyReader reader) {
        return new SubscribeFrame(reader.readLong("requestId"), reader.readInt("consumerTag"),
                reader.readString("queue"), reader.readNonNegativeInt("initialCredit"));
    }
}
