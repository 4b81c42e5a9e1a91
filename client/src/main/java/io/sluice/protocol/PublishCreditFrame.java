package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * PUBLISH_CREDIT (0x24, broker to client): widens the connection's publish window by this many messages and
 * bytes (headers and payload, or payload alone: the unit of HELLO_OK, {@link HelloOkFrame}). The broker sends it as confirms free room, so a client that stays inside its window never
 * overruns the broker's memory.
 *
 * <pre>
 * int32 messages | int64 bytes         (both &gt;= 0)
 * </pre>
 */
public record PublishCreditFrame(int messages, long bytes) implements Frame {
    public PublishCreditFrame {
        WireFormat.checkNonNegative("messages", messages);
        WireFormat.checkNonNegative("bytes", bytes);
    }

    @Override
    public FrameType type() {
        return FrameType.PUBLISH_CREDIT;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeInt(messages);
        out.writeLong(bytes);
    }

    static PublishCreditFrame decodeBody(BodyReader reader) {
        return new PublishCreditFrame(reader.readNonNegativeInt("messages"), reader.readNonNegativeLong("bytes"));
    }
}
