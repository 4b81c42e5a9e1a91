package io.sluice.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.MessageToMessageEncoder;

import java.util.List;

/**
 * Turns outbound {@link Frame}s into bytes, in the layout {@link Frame} draws. One instance per connection
 * ({@link #maxFrameBytes(int)} may be called from any thread).
 *
 * <p>Small frames are written into one pooled buffer. A PUBLISH, TX_PUBLISH or DELIVER becomes two buffers: a small one
 * with the header and the body prefix, and a retained slice of the frame's message buffer, so payloads are
 * never copied on the way out. The encoder releases every frame it is given, as Netty encoders do.
 *
 * <p>A frame whose frameLength would exceed maxFrameBytes is not sent: the write fails with an
 * {@code EncoderException} caused by a {@link ProtocolException} with FRAME_TOO_LARGE, so a batching
 * producer learns to cut smaller batches before the peer has to close the connection.
 */
public final class FrameEncoder extends MessageToMessageEncoder<Frame> {
    private static final int SMALL_FRAME_CAPACITY = 64;

    private volatile int maxFrameBytes;

    public FrameEncoder(int maxFrameBytes) {
        super(Frame.class);
        this.maxFrameBytes = FrameDecoder.checkMaxFrameBytes(maxFrameBytes);
    }

    public int maxFrameBytes() {
        return maxFrameBytes;
    }

    public void maxFrameBytes(int maxFrameBytes) {
        this.maxFrameBytes = FrameDecoder.checkMaxFrameBytes(maxFrameBytes);
    }

    @Override
    protected void encode(ChannelHandlerContext context, Frame frame, List<Object> out) {
        ByteBufAllocator allocator = context.alloc();
        if (frame instanceof MessageBatchFrame batch) {
            ByteBuf messages = batch.content();
            ByteBuf header = allocator.ioBuffer(SMALL_FRAME_CAPACITY);
            try {
                writeHeader(header, frame);
                batch.encodeBatchPrefix(header);
                finish(header, frame, messages.readableBytes(), maxFrameBytes);
            } catch (RuntimeException e) {
                header.release();
                throw e;
            }
            out.add(header);
            if (messages.isReadable()) {
                out.add(messages.retainedSlice());
            }
        } else {
            out.add(encode(allocator, frame, maxFrameBytes));
        }
    }

    /**
     * Encodes a whole frame into one new buffer, copying a batch's messages; the caller owns the result and
     * still owns {@code frame}. For tests, benchmarks and tools outside a pipeline.
     */
    public static ByteBuf encode(ByteBufAllocator allocator, Frame frame, int maxFrameBytes) {
        ByteBuf buffer = allocator.ioBuffer(SMALL_FRAME_CAPACITY);
        try {
            writeHeader(buffer, frame);
            frame.encodeBody(buffer);
            finish(buffer, frame, 0, maxFrameBytes);
            return buffer;
        } catch (RuntimeException e) {
            buffer.release();
            throw e;
        }
    }

    private static void writeHeader(ByteBuf out, Frame frame) {
        out.writeInt(0);
        out.writeByte(frame.type().code());
        out.writeByte(frame.flags());
    }

    /** Fills in frameLength, counting {@code followingBytes} that will be sent after this buffer. */
    private static void finish(ByteBuf buffer, Frame frame, int followingBytes, int maxFrameBytes) {
        long frameLength = (long) buffer.readableBytes() - FrameDecoder.LENGTH_FIELD_BYTES + followingBytes;
        if (frameLength > maxFrameBytes) {
            throw new ProtocolException(ErrorCode.FRAME_TOO_LARGE, frame.type() + " frame length " + frameLength
                    + " exceeds maxFrameBytes " + maxFrameBytes);
        }
        buffer.setInt(buffer.readerIndex(), (int) frameLength);
    }
}
