package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

import java.util.List;

/**
 * ACK (0x33, client to broker): the messages with these ids, delivered to this subscription, are done and
 * may be deleted. Ranges make acknowledging a whole DELIVER batch one 28-byte frame.
 *
 * <pre>
 * int32 consumerTag | int32 rangeCount | rangeCount x (int64 fromMessageId | int64 toMessageId)
 * </pre>
 */
public record AckFrame(int consumerTag, List<IdRange> messageIds) implements Frame {
    public AckFrame {
        messageIds = WireFormat.checkList("messageIds", messageIds);
    }

    @Override
    public FrameType type() {
        return FrameType.ACK;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeInt(consumerTag);
        WireFormat.writeRanges(out, messageIds);
    }

    static AckFrame decodeBody(BodyReader reader) {
        return new AckFrame(reader.readInt("consumerTag"), WireFormat.readRanges(reader));
    }
}
