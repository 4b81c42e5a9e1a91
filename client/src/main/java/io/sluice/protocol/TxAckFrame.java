package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

import java.util.List;

/**
 * TX_ACK (0x42, client to broker): acknowledges deliveries of one subscription inside a transaction. The
 * messages are held (not redelivered, not timed out; their credit is freed now) until the commit
 * acknowledges them or a rollback returns them to their queue. Not answered; a refusal is TX_ABORTED.
 *
 * <pre>
 * int64 txnId (never 0) | ACK body: int32 consumerTag | int32 rangeCount
 *                                   | rangeCount x (int64 fromMessageId | int64 toMessageId)
 * </pre>
 */
public record TxAckFrame(long txnId, int consumerTag, List<IdRange> messageIds) implements Frame {
    public TxAckFrame {
        WireFormat.checkTransactionId(txnId);
        messageIds = WireFormat.checkList("messageIds", messageIds);
    }

    @Override
    public FrameType type() {
        return FrameType.TX_ACK;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(txnId);
        out.writeInt(consumerTag);
        WireFormat.writeRanges(out, messageIds);
    }

    static TxAckFrame decodeBody(BodyReader reader) {
        long txnId = reader.readTransactionId();
        AckFrame ack = AckFrame.decodeBody(reader);
        return new TxAckFrame(txnId, ack.consumerTag(), ack.messageIds());
    }
}
