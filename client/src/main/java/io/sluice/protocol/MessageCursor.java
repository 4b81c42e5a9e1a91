package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

import java.nio.ByteBuffer;

import java.util.List;

/**
 * Walks the messages of a PUBLISH or DELIVER batch in place, without copying them.
 *
 * <p>Each message ends with the same two parts, after the fields its frame type defines:
 * <pre>
 * ... | int32 headersLength | headers (see {@link HeaderBlock}) | int32 payloadLength | payload
 * </pre>
 * The decoder validated every length, so the cursor reads without checks. {@link #payload()} and
 * {@link #encodedHeaders()} are slices of the frame's buffer: valid until the frame is released, and not
 * retained; call {@code retainedSlice()} or {@code retain()} on them to keep them longer. Not thread-safe.
 */
public abstract sealed class MessageCursor permits PublishCursor, DeliverCursor {
    private final ByteBuf messages;
    private final int messageCount;
    private int messagesRead;
    private int position;
    private int headersIndex;
    private int headersLength;
    private int payloadIndex;
    private int payloadLength;

    MessageCursor(ByteBuf messages, int messageCount) {
        this.messages = messages;
        this.messageCount = messageCount;
        this.position = messages.readerIndex();
    }

    /** Moves to the next message; returns {@code false}, and stays put, when the batch is exhausted. */
    public final boolean next() {
        if (messagesRead == messageCount) {
            return false;
        }
        int index = readLeadingFields(messages, position);
        headersLength = messages.getInt(index);
        headersIndex = index + Integer.BYTES;
        index = headersIndex + headersLength;
        payloadLength = messages.getInt(index);
        payloadIndex = index + Integer.BYTES;
        position = payloadIndex + payloadLength;
        messagesRead++;
        return true;
    }

    /** Reads the frame-specific fields at {@code index} and returns the index after them. */
    abstract int readLeadingFields(ByteBuf buffer, int index);

    public final int messageCount() {
        return messageCount;
    }

    public final int payloadLength() {
        return payloadLength;
    }

    /**
     * The batch's buffer as one NIO buffer in which position {@code i} is the batch buffer's index
     * {@code i}, to be read with the absolute offsets below: one object per frame instead of two
     * slices per message. Valid, like the slices, until the frame is released.
     */
    public final ByteBuffer nioBuffer() {
        return messages.nioBuffer(0, messages.writerIndex());
    }

    /** Offset of the current message's encoded header entries in {@link #nioBuffer()}. */
    public final int headersOffset() {
        return headersIndex;
    }

    /** Length of the current message's encoded header entries (without their length prefix). */
    public final int headersLength() {
        return headersLength;
    }

    /** Offset of the current message's payload in {@link #nioBuffer()}. */
    public final int payloadOffset() {
        return payloadIndex;
    }

    /** The current message's payload, a non-retained slice of the frame's buffer. */
    public final ByteBuf payload() {
        return messages.slice(payloadIndex, payloadLength);
    }

    /** The current message's header entries without their length prefix, for storing and forwarding as is. */
    public final ByteBuf encodedHeaders() {
        return messages.slice(headersIndex, headersLength);
    }

    /** The current message's headers, parsed into new objects; an empty list costs nothing. */
    public final List<MessageHeader> headers() {
        if (headersLength == 0) {
            return List.of();
        }
        return HeaderBlock.parse(encodedHeaders());
    }
}
