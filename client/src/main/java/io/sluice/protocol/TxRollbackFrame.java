package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * TX_ROLLBACK (0x44, client to broker): rolls a transaction back: its publishes are dropped and the messages
 * it acknowledged return to their queues. Answered by OK or ERROR (UNKNOWN_TRANSACTION).
 *
 * <pre>
 * int64 requestId | int64 txnId (never 0)
 * </pre>
 */
public record TxRollbackFrame(long requestId, long txnId) implements Frame {
    public TxRollbackFrame {
        WireFormat.checkTransactionId(txnId);
    }

    @Override
    public FrameType type() {
        return FrameType.TX_ROLLBACK;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(requestId);
        out.writeLong(txnId);
    }

    static TxRollbackFrame decodeBody(BodyReader reader) {
        return new TxRollbackFrame(reader.readLong("requestId"), reader.readTransactionId());
    }
}
