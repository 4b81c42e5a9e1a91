package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * TX_COMMIT (0x43, client to broker): commits a transaction. Answered by OK once its commit record is
 * durable and its publishes and acknowledgements are applied, or by ERROR (UNKNOWN_TRANSACTION, or the
 * reason it was rolled back instead).
 *
 * <pre>
 * int64 requestId | int64 txnId (never 0)
 * </pre>
 */
public record TxCommitFrame(long requestId, long txnId) implements Frame {
    public TxCommitFrame {
        WireFormat.checkTransactionId(txnId);
    }

    @Override
    public FrameType type() {
        return FrameType.TX_COMMIT;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(requestId);
        out.writeLong(txnId);
    }

    static TxCommitFrame decodeBody(BodyReader reader) {
        return new TxCommitFrame(reader.readLong("requestId"), reader.readTransactionId());
    }
}
