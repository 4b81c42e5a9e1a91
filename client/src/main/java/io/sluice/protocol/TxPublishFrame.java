package io.sluice.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.DefaultByteBufHolder;

import java.util.Objects;

/**
 * TX_PUBLISH (0x41, client to broker): a batch of messages for one queue, staged in a transaction and stored
 * (visible to consumers) only when it commits. Not confirmed: the commit is. The messages take from the
 * connection's publish window like a PUBLISH, and PUBLISH_CREDIT gives the window back once they are
 * staged (or refused). A refusal is TX_ABORTED.
 *
 * <pre>
 * int64 txnId (never 0) | PUBLISH body: string queue | int32 messageCount | messageCount x message
 *     message: int64 producerId | int64 sequence
 *              | int32 headersLength | headers (see {@link HeaderBlock})
 *              | int32 payloadLength | payload
 * </pre>
 * producerId and sequence are carried but not deduplicated; a client may send 0 and 0.
 *
 * <p>Ownership: the frame takes over the {@link PublishFrame} it is made from and shares its buffer and
 * reference count, so releasing either releases both; otherwise as for {@link PublishFrame} (a decoded
 * frame holds a retained slice of the inbound bytes, its receiver releases it; the encoder releases a written
 * frame). {@link #publish()} is valid until the frame is released; retain it to hand it on.
 */
public final class TxPublishFrame extends DefaultByteBufHolder implements Frame, MessageBatchFrame {
    private final long txnId;
    private final PublishFrame publish;

    /**
     * Takes ownership of {@code publish}, built with {@link PublishFrameBuilder}; if this throws (txnId 0),
     * {@code publish} stays the caller's.
     */
    public TxPublishFrame(long txnId, PublishFrame publish) {
        super(checkedContent(txnId, publish));
        this.txnId = txnId;
        this.publish = publish;
    }

    /** Checks the id before the buffer is taken over. */
    private static ByteBuf checkedContent(long txnId, PublishFrame publish) {
        WireFormat.checkTransactionId(txnId);
        return publish.content();
    }

    public long txnId() {
        return txnId;
    }

    /** The staged messages as a PUBLISH would carry them; shares this frame's buffer and reference count. */
    public PublishFrame publish() {
        return publish;
    }

    @Override
    public FrameType type() {
        return FrameType.TX_PUBLISH;
    }

    @Override
    public void encodeBatchPrefix(ByteBuf out) {
        out.writeLong(txnId);
        publish.encodeBatchPrefix(out);
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(txnId);
        publish.encodeBody(out);
    }

    static TxPublishFrame decodeBody(BodyReader reader) {
        long txnId = reader.readTransactionId();
        return new TxPublishFrame(txnId, PublishFrame.decodeBody(reader));
    }

    @Override
    public TxPublishFrame replace(ByteBuf content) {
        return new TxPublishFrame(txnId, publish.replace(content));
    }

    @Override
    public TxPublishFrame retain() {
        super.retain();
        return this;
    }

    @Override
    public TxPublishFrame retain(int increment) {
        super.retain(increment);
        return this;
    }

    @Override
    public TxPublishFrame touch(Object hint) {
        super.touch(hint);
        return this;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof TxPublishFrame that && txnId == that.txnId && publish.equals(that.publish);
    }

    @Override
    public int hashCode() {
        return Objects.hash(txnId, publish);
    }

    @Override
    public String toString() {
        return "TxPublishFrame[txnId=" + txnId + ", " + publish + "]";
    }
}
