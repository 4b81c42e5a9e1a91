package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * TX_ABORTED (0x45, broker to client): the broker rolled this transaction back on its own: it timed out, it
 * went over a limit, or it refused one of its TX_BEGIN, TX_PUBLISH or TX_ACK frames. The id is free again.
 *
 * <pre>
 * int64 txnId (never 0) | uint16 code | string message
 * </pre>
 * {@code code} is an {@link ErrorCode} number (TRANSACTION_TIMED_OUT, TRANSACTION_LIMIT, TRANSACTION_ABORTED,
 * ...); {@code message} is a sentence naming the subject, the value and the limit, as in ERROR.
 */
public record TxAbortedFrame(long txnId, int code, String message) implements Frame {
    public TxAbortedFrame {
        WireFormat.checkTransactionId(txnId);
        WireFormat.checkUnsignedShort("code", code);
        WireFormat.checkString("message", message);
    }

    public TxAbortedFrame(long txnId, ErrorCode code, String message) {
        this(txnId, code.code(), message);
    }

    /** The code as this version knows it; {@link ErrorCode#UNKNOWN} for a newer peer's code. */
    public ErrorCode errorCode() {
        return ErrorCode.fromCode(code);
    }

    @Override
    public FrameType type() {
        return FrameType.TX_ABORTED;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(txnId);
        out.writeShort(code);
        WireFormat.writeString(out, message);
    }

    static TxAbortedFrame decodeBody(BodyReader reader) {
        return new TxAbortedFrame(reader.readTransactionId(), reader.readUnsignedShort("code"),
                reader.readString("message"));
    }
}
