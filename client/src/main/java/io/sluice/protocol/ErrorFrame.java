package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * ERROR (0x14, broker to client): the request with this id failed, or, with requestId 0, something went
 * wrong on the connection that no request caused. The connection stays open; a fatal problem is a CLOSE.
 *
 * <pre>
 * int64 requestId | uint16 code | string message
 * </pre>
 * {@code code} is an {@link ErrorCode} number; {@code message} is a sentence naming the subject, the value
 * and the limit, never a stack trace.
 */
public record ErrorFrame(long requestId, int code, String message) implements Frame {
    public ErrorFrame {
        WireFormat.checkUnsignedShort("code", code);
        WireFormat.checkString("message", message);
    }

    public ErrorFrame(long requestId, ErrorCode code, String message) {
        this(requestId, code.code(), message);
    }

    /** The code as this version knows it; {@link ErrorCode#UNKNOWN} for a newer peer's code. */
    public ErrorCode errorCode() {
        return ErrorCode.fromCode(code);
    }

    @Override
    public FrameType type() {
        return FrameType.ERROR;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(requestId);
        out.writeShort(code);
        WireFormat.writeString(out, message);
    }

    static ErrorFrame decodeBody(BodyReader reader) {
        return new ErrorFrame(reader.readLong("requestId"), reader.readUnsignedShort("code"),
                reader.readString("message"));
    }
}
