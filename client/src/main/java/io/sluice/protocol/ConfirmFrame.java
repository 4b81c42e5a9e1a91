package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

import java.util.List;

/**
 * CONFIRM (0x21, broker to client): the messages of one producer with these sequences are stored durably.
 * One CONFIRM may cover many PUBLISH frames; the ranges need not be sorted or merged, but usually are one
 * range per flush.
 *
 * <pre>
 * int64 producerId | int32 rangeCount | rangeCount x (int64 fromSequence | int64 toSequence)
 * </pre>
 */
public record ConfirmFrame(long producerId, List<IdRange> sequences) implements Frame {
    public ConfirmFrame {
        sequences = WireFormat.checkList("sequences", sequences);
    }

    @Override
    public FrameType type() {
        return FrameType.CONFIRM;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(producerId);
        WireFormat.writeRanges(out, sequences);
    }

    static ConfirmFrame decodeBody(BodyReader reader) {
        return new ConfirmFrame(reader.readLong("producerId"), WireFormat.readRanges(reader));
    }
}
