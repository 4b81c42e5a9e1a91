package io.sluice.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;

import java.util.List;

/**
 * Builds one {@link PublishFrame}; see {@link MessageBatchBuilder} for buffer ownership.
 *
 * <pre>
 * PublishFrame frame = new PublishFrameBuilder(alloc, "orders")
 *         .add(producerId, 1, List.of(), payload)
 *         .build();
 * channel.writeAndFlush(frame);
 * </pre>
 */
public final class PublishFrameBuilder extends MessageBatchBuilder<PublishFrame> {
    private final String queue;

    public PublishFrameBuilder(ByteBufAllocator allocator, String queue) {
        super(allocator);
        this.queue = WireFormat.checkString("queue", queue);
    }

    /** Appends a message, copying the readable bytes of {@code payload} (which stays the caller's). */
    public PublishFrameBuilder add(long producerId, long sequence, List<MessageHeader> headers, ByteBuf payload) {
        ByteBuf out = beginMessage();
        out.writeLong(producerId);
        out.writeLong(sequence);
        finishMessage(headers, null, payload);
        return this;
    }

    public PublishFrameBuilder add(long producerId, long sequence, List<MessageHeader> headers, byte[] payload) {
        return add(producerId, sequence, headers, Unpooled.wrappedBuffer(payload));
    }

    @Override
    PublishFrame newFrame(int count, ByteBuf content) {
        return new PublishFrame(queue, count, content);
    }
}
