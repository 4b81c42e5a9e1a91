package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * CREDIT (0x31, client to broker): lets the broker deliver this many more messages to a subscription.
 *
 * <pre>
 * int32 consumerTag | int32 credit (&gt;= 0, added to the remaining credit)
 * </pre>
 */
public record CreditFrame(int consumerTag, int credit) implements Frame {
    public CreditFrame {
        WireFormat.checkNonNegative("credit", credit);
    }

    @Override
    public FrameType type() {
        return FrameType.CREDIT;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeInt(consumerTag);
        out.writeInt(credit);
    }

    static CreditFrame decodeBody(BodyReader reader) {
        return new CreditFrame(reader.readInt("consumerTag"), reader.readNonNegativeInt("credit"));
    }
}
