package io.sluice.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.DefaultByteBufHolder;

import java.util.Objects;

/**
 * PUBLISH (0x20, client to broker): a batch of messages for one queue. Each message is settled later by a
 * CONFIRM or a PUBLISH_ERROR naming its producerId and sequence.
 *
 * <pre>
 * string queue | int32 messageCount | messageCount x message
 *     message: int64 producerId | int64 sequence
 *              | int32 headersLength | headers (see {@link HeaderBlock})
 *              | int32 payloadLength | payload
 * </pre>
 * A message takes at least 24 bytes, so a messageCount above (bytes left / 24) is rejected before anything
 * is read. An empty batch (messageCount 0) is valid and settles nothing.
 *
 * <p>Ownership: the frame holds the encoded messages as one buffer ({@link #content()}). A decoded frame's
 * buffer is a retained slice of the inbound bytes, so no payload is copied; whoever receives the frame from
 * the pipeline releases it ({@code SimpleChannelInboundHandler} does so after {@code channelRead0}).
 * Writing a frame to a channel hands it to {@link FrameEncoder}, which releases it. Build frames with
 * {@link PublishFrameBuilder}; read them with {@link #cursor()}.
 */
public final class PublishFrame extends DefaultByteBufHolder implements Frame, MessageBatchFrame {
    /** producerId, sequence, headersLength and payloadLength. */
    static final int MIN_MESSAGE_BYTES = Long.BYTES + Long.BYTES + Integer.BYTES + Integer.BYTES;

    private final String queue;
    private final int messageCount;

    PublishFrame(String queue, int messageCount, ByteBuf messages) {
        super(messages);
        this.queue = WireFormat.checkString("queue", queue);
        this.messageCount = messageCount;
    }

    public String queue() {
        return queue;
    }

    public int messageCount() {
        return messageCount;
    }

    /** Headers plus payload of the frame's messages: what quotas, publish windows of bytes and transaction caps count. */
    public long messageBytes() {
        PublishCursor cursor = cursor();
        long total = 0;
        while (cursor.next()) {
            total += cursor.headersLength() + cursor.payloadLength();
        }
        return total;
    }

    /** A fresh cursor over the messages; valid until this frame is released. */
    public PublishCursor cursor() {
        return new PublishCursor(content(), messageCount);
    }

    @Override
    public FrameType type() {
        return FrameType.PUBLISH;
    }

    @Override
    public void encodeBatchPrefix(ByteBuf out) {
        WireFormat.writeString(out, queue);
        out.writeInt(messageCount);
    }

    @Override
    public void encodeBody(ByteBuf out) {
        encodeBatchPrefix(out);
        out.writeBytes(content(), content().readerIndex(), content().readableBytes());
    }

    static PublishFrame decodeBody(BodyReader reader) {
        String queue = reader.readString("queue");
        int count = reader.readCount("messageCount", MIN_MESSAGE_BYTES);
        int start = reader.readerIndex();
        for (int i = 0; i < count; i++) {
            reader.readLong("message producerId");
            reader.readLong("message sequence");
            HeaderBlock.validate(reader);
            reader.skipBytes(reader.readBytesLength("message payload"));
        }
        reader.requireFullyRead();
        return new PublishFrame(queue, count, reader.retainedSliceFrom(start));
    }

    @Override
    public PublishFrame replace(ByteBuf content) {
        return new PublishFrame(queue, messageCount, content);
    }

    @Override
    public PublishFrame retain() {
        super.retain();
        return this;
    }

    @Override
    public PublishFrame retain(int increment) {
        super.retain(increment);
        return this;
    }

    @Override
    public PublishFrame touch(Object hint) {
        super.touch(hint);
        return this;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof PublishFrame that && queue.equals(that.queue)
                && messageCount == that.messageCount && content().equals(that.content());
    }

    @Override
    public int hashCode() {
        return Objects.hash(queue, messageCount, content());
    }

    @Override
    public String toString() {
        return "PublishFrame[queue=" + queue + ", messageCount=" + messageCount + ", messageBytes="
                + (refCnt() > 0 ? content().readableBytes() : "released") + "]";
    }
}
