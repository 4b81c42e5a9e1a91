package io.sluice.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.DefaultByteBufHolder;

import java.util.Objects;

/**
 * DELIVER (0x32, broker to client): a batch of messages for one subscription, each to be settled by ACK or
 * NACK naming its messageId. Each delivered message consumed one unit of the subscription's credit.
 *
 * <pre>
 * int32 consumerTag | int32 messageCount | messageCount x message
 *     message: int64 messageId | int32 deliveryCount (&gt;= 1)
 *              | int32 headersLength | headers (see {@link HeaderBlock})
 *              | int32 payloadLength | payload
 * </pre>
 * A message takes at least 20 bytes, so a messageCount above (bytes left / 20) is rejected before anything
 * is read.
 *
 * <p>Ownership is as for {@link PublishFrame}: a decoded frame holds a retained slice of the inbound bytes
 * and its receiver releases it; the encoder releases a written frame. Build with {@link DeliverFrameBuilder},
 * read with {@link #cursor()}.
 */
public final class DeliverFrame extends DefaultByteBufHolder implements Frame, MessageBatchFrame {
    /** messageId, deliveryCount, headersLength and payloadLength. */
    static final int MIN_MESSAGE_BYTES = Long.BYTES + Integer.BYTES + Integer.BYTES + Integer.BYTES;

    private final int consumerTag;
    private final int messageCount;

    DeliverFrame(int consumerTag, int messageCount, ByteBuf messages) {
        super(messages);
        this.consumerTag = consumerTag;
        this.messageCount = messageCount;
    }

    public int consumerTag() {
        return consumerTag;
    }

    public int messageCount() {
        return messageCount;
    }

    /** A fresh cursor over the messages; valid until this frame is released. */
    public DeliverCursor cursor() {
        return new DeliverCursor(content(), messageCount);
    }

    @Override
    public FrameType type() {
        return FrameType.DELIVER;
    }

    @Override
    public void encodeBatchPrefix(ByteBuf out) {
        out.writeInt(consumerTag);
        out.writeInt(messageCount);
    }

    @Override
    public void encodeBody(ByteBuf out) {
        encodeBatchPrefix(out);
        out.writeBytes(content(), content().readerIndex(), content().readableBytes());
    }

    static DeliverFrame decodeBody(BodyReader reader) {
        int consumerTag = reader.readInt("consumerTag");
        int count = reader.readCount("messageCount", MIN_MESSAGE_BYTES);
        int start = reader.readerIndex();
        for (int i = 0; i < count; i++) {
            reader.readLong("message messageId");
            int deliveryCount = reader.readInt("message deliveryCount");
            if (deliveryCount < 1) {
                throw reader.malformed("message deliveryCount " + deliveryCount + " is below the minimum of 1");
            }
            HeaderBlock.validate(reader);
            reader.skipBytes(reader.readBytesLength("message payload"));
        }
        reader.requireFullyRead();
        return new DeliverFrame(consumerTag, count, reader.retainedSliceFrom(start));
    }

    @Override
    public DeliverFrame replace(ByteBuf content) {
        return new DeliverFrame(consumerTag, messageCount, content);
    }

    @Override
    public DeliverFrame retain() {
        super.retain();
        return this;
    }

    @Override
    public DeliverFrame retain(int increment) {
        super.retain(increment);
        return this;
    }

    @Override
    public DeliverFrame touch(Object hint) {
        super.touch(hint);
        return this;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof DeliverFrame that && consumerTag == that.consumerTag
                && messageCount == that.messageCount && content().equals(that.content());
    }

    @Override
    public int hashCode() {
        return Objects.hash(consumerTag, messageCount, content());
    }

    @Override
    public String toString() {
        return "DeliverFrame[consumerTag=" + consumerTag + ", messageCount=" + messageCount + ", messageBytes="
                + (refCnt() > 0 ? content().readableBytes() : "released") + "]";
    }
}
