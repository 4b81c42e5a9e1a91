package io.sluice.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;

import java.util.List;

/**
 * Builds one {@link DeliverFrame}; see {@link MessageBatchBuilder} for buffer ownership. The broker usually
 * passes the header block it stored from {@link MessageCursor#encodedHeaders()} so headers are never parsed.
 */
public final class DeliverFrameBuilder extends MessageBatchBuilder<DeliverFrame> {
    private final int consumerTag;

    public DeliverFrameBuilder(ByteBufAllocator allocator, int consumerTag) {
        super(allocator);
        this.consumerTag = consumerTag;
    }

    /** Appends a message, copying {@code payload}'s readable bytes. */
    public DeliverFrameBuilder add(long messageId, int deliveryCount, List<MessageHeader> headers, ByteBuf payload) {
        checkDeliveryCount(deliveryCount);
        ByteBuf out = beginMessage();
        out.writeLong(messageId);
        out.writeInt(deliveryCount);
        finishMessage(headers, null, payload);
        return this;
    }

    public DeliverFrameBuilder add(long messageId, int deliveryCount, List<MessageHeader> headers, byte[] payload) {
        return add(messageId, deliveryCount, headers, Unpooled.wrappedBuffer(payload));
    }

    /**
     * Appends a message whose headers are an encoded block as {@link MessageCursor#encodedHeaders()} returns
     * it; both buffers' readable bytes are copied.
     */
    public DeliverFrameBuilder addEncoded(long messageId, int deliveryCount, ByteBuf encodedHeaders, ByteBuf payload) {
        checkDeliveryCount(deliveryCount);
        ByteBuf out = beginMessage();
        out.writeLong(messageId);
        out.writeInt(deliveryCount);
        finishMessage(null, encodedHeaders, payload);
        return this;
    }

    /**
     * Adds a message whose encoded header entries and payload are regions of {@code array}, as the broker's
     * store hands them out; the same bytes on the wire as {@link #addEncoded(long, int, ByteBuf, ByteBuf)}.
     */
    public DeliverFrameBuilder addEncoded(long messageId, int deliveryCount, byte[] array, int headersOffset,
                                          int headersLength, int payloadOffset, int payloadLength) {
        checkDeliveryCount(deliveryCount);
        ByteBuf out = beginMessage();
        out.writeLong(messageId);
        out.writeInt(deliveryCount);
        finishMessage(array, headersOffset, headersLength, payloadOffset, payloadLength);
        return this;
    }

    @Override
    DeliverFrame newFrame(int count, ByteBuf content) {
        return new DeliverFrame(consumerTag, count, content);
    }

    private static int checkDeliveryCount(int deliveryCount) {
        if (deliveryCount < 1) {
            throw new IllegalArgumentException("deliveryCount " + deliveryCount + " is below the minimum of 1");
        }
        return deliveryCount;
    }
}
