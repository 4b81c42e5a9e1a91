package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * TX_BEGIN (0x40, client to broker): opens a local transaction on this connection under an id the client
 * chose (docs/protocol.md, "Transactions"). Not answered on success, so the frames that use the transaction
 * follow at once; a refusal (id in use, too many open, ...) comes as TX_ABORTED.
 *
 * <pre>
 * int64 txnId (never 0) | int32 timeoutMs (&gt;= 0, 0 = the broker's default)
 * </pre>
 * {@code txnId} is unique among the connection's open transactions. The broker rolls a transaction back on
 * its own once it has been open for {@code timeoutMs}.
 */
public record TxBeginFrame(long txnId, int timeoutMs) implements Frame {
    public TxBeginFrame {
        WireFormat.checkTransactionId(txnId);
        WireFormat.checkNonNegative("timeoutMs", timeoutMs);
    }

    @Override
    public FrameType type() {
        return FrameType.TX_BEGIN;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(txnId);
        out.writeInt(timeoutMs);
    }

    static TxBeginFrame decodeBody(BodyReader reader) {
        return new TxBeginFrame(reader.readTransactionId(), reader.readNonNegativeInt("timeoutMs"));
    }
}
