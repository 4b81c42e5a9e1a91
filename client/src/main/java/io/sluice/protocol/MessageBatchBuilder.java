package io.sluice.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

import java.util.List;

/**
 * Encodes messages one by one straight into a single pooled buffer that becomes the batch frame's content,
 * so a batch costs one allocation however many messages it holds.
 *
 * <p>Ownership: the builder owns its buffer until {@link #build()} hands it to the frame (which the caller
 * then owns: write it to a channel, or release it). A builder that is not built must be {@link #discard()}ed.
 * Payload and header buffers passed in are copied, never retained or released. Not thread-safe.
 */
public abstract sealed class MessageBatchBuilder<F extends Frame> permits PublishFrameBuilder, DeliverFrameBuilder {
    private static final int INITIAL_CAPACITY = 256;

    private ByteBuf messages;
    private int messageCount;
    private int messageStart;

    MessageBatchBuilder(ByteBufAllocator allocator) {
        this.messages = allocator.ioBuffer(INITIAL_CAPACITY);
    }

    public final int messageCount() {
        return messageCount;
    }

    /**
     * Bytes of encoded messages so far; the frame adds its prefix and the 6-byte header, so compare
     * {@code encodedBytes() + 6 + prefix} with maxFrameBytes before adding more.
     */
    public final int encodedBytes() {
        return open().readableBytes();
    }

    /** Hands the buffer to a new frame; the builder cannot be used afterwards. */
    public final F build() {
        ByteBuf content = open();
        messages = null;
        return newFrame(messageCount, content);
    }

    /** Releases the buffer of a builder that will not be built; harmless after {@link #build()}. */
    public final void discard() {
        if (messages != null) {
            messages.release();
            messages = null;
        }
    }

    abstract F newFrame(int count, ByteBuf content);

    /** Starts a message; the subclass writes its frame-specific fields to the returned buffer. */
    final ByteBuf beginMessage() {
        ByteBuf out = open();
        if (messageCount == Integer.MAX_VALUE) {
            throw new IllegalStateException("batch message count is at the limit of " + Integer.MAX_VALUE);
        }
        messageStart = out.writerIndex();
        return out;
    }

    /**
     * Ends the message begun last with its headers (either parsed, or {@code encodedHeaders} as a cursor
     * handed them out) and payload; on failure the partial message is removed.
     */
    final void finishMessage(List<MessageHeader> headers, ByteBuf encodedHeaders, ByteBuf payload) {
        ByteBuf out = open();
        try {
            if (encodedHeaders != null) {
                HeaderBlock.writeEncoded(out, encodedHeaders);
            } else {
                HeaderBlock.write(out, headers);
            }
            out.writeInt(payload.readableBytes());
            out.writeBytes(payload, payload.readerIndex(), payload.readableBytes());
        } catch (RuntimeException e) {
            out.writerIndex(messageStart);
            throw e;
        }
        messageCount++;
    }

    /**
     * Ends the message begun last with encoded header entries and a payload that are regions of
     * {@code array} (as a stored message holds them): copied straight in, with no buffer wrapped around them.
     */
    final void finishMessage(byte[] array, int headersOffset, int headersLength, int payloadOffset, int payloadLength) {
        ByteBuf out = open();
        try {
            out.writeInt(headersLength);
            out.writeBytes(array, headersOffset, headersLength);
            out.writeInt(payloadLength);
            out.writeBytes(array, payloadOffset, payloadLength);
        } catch (RuntimeException e) {
            out.writerIndex(messageStart);
            throw e;
        }
        messageCount++;
    }

    private ByteBuf open() {
        if (messages == null) {
            throw new IllegalStateException("batch builder was already built or discarded");
        }
        return messages;
    }
}
