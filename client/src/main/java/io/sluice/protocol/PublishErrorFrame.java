package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

import java.util.Objects;

/**
 * PUBLISH_ERROR (0x22, broker to client): the messages of one producer with these sequences were not
 * stored. They are settled: the broker will never confirm them. Retry when the code is retriable.
 *
 * <pre>
 * int64 producerId | int64 fromSequence | int64 toSequence | uint16 code | string message
 * </pre>
 */
public record PublishErrorFrame(long producerId, IdRange sequences, int code, String message) implements Frame {
    public PublishErrorFrame {
        Objects.requireNonNull(sequences, "sequences");
        WireFormat.checkUnsignedShort("code", code);
        WireFormat.checkString("message", message);
    }

    public PublishErrorFrame(long producerId, IdRange sequences, ErrorCode code, String message) {
        this(producerId, sequences, code.code(), message);
    }

    /** The code as this version knows it; {@link ErrorCode#UNKNOWN} for a newer peer's code. */
    public ErrorCode errorCode() {
        return ErrorCode.fromCode(code);
    }

    @Override
    public FrameType type() {
        return FrameType.PUBLISH_ERROR;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(producerId);
        out.writeLong(sequences.from());
        out.writeLong(sequences.to());
        out.writeShort(code);
        WireFormat.writeString(out, message);
    }

    static PublishErrorFrame decodeBody(BodyReader reader) {
        return new PublishErrorFrame(reader.readLong("producerId"), IdRange.read(reader),
                reader.readUnsignedShort("code"), reader.readString("message"));
    }
}
