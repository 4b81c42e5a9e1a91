package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * CLOSE (0x04, both ways): the sender is about to close the connection, and why. The receiver stops sending
 * and closes its side; unconfirmed publishes must be resent on a new connection.
 *
 * <pre>
 * uint16 code | string reason
 * </pre>
 * {@code code} is an {@link ErrorCode} number, NONE (0) for a normal close.
 */
public record CloseFrame(int code, String reason) implements Frame {
    public CloseFrame {
        WireFormat.checkUnsignedShort("code", code);
        WireFormat.checkString("reason", reason);
    }

    public CloseFrame(ErrorCode code, String reason) {
        this(code.code(), reason);
    }

    /** The code as this version knows it; {@link ErrorCode#UNKNOWN} for a newer peer's code. */
    public ErrorCode errorCode() {
        return ErrorCode.fromCode(code);
    }

    @Override
    public FrameType type() {
        return FrameType.CLOSE;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeShort(code);
        WireFormat.writeString(out, reason);
    }

    static CloseFrame decodeBody(BodyReader reader) {
        return new CloseFrame(reader.readUnsignedShort("code"), reader.readString("reason"));
    }
}
