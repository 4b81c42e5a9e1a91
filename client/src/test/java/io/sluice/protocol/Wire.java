package io.sluice.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ReferenceCountUtil;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Encodes and decodes through real pipelines, and builds hand-made frames for the decoder tests. */
final class Wire {
    static final int MAX_FRAME_BYTES = 1 << 20;

    private Wire() {
    }

    /** Encodes through a {@link FrameEncoder} pipeline; {@code frame} is released, as a channel write would. */
    static byte[] encode(Frame frame) {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameEncoder(MAX_FRAME_BYTES));
        channel.writeOutbound(frame);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        for (ByteBuf out = channel.readOutbound(); out != null; out = channel.readOutbound()) {
            bytes.writeBytes(ByteBufUtil.getBytes(out));
            out.release();
        }
        channel.finishAndReleaseAll();
        return bytes.toByteArray();
    }

    /** Encodes {@code frame} keeping it alive: the caller still owns it. */
    static byte[] encodeRetained(Frame frame) {
        ReferenceCountUtil.retain(frame);
        return encode(frame);
    }

    /**
     * Feeds {@code chunks} one by one into a fresh decoder and returns every frame it produced. The chunk
     * buffers are registered with {@link LeakCheck}: once the caller released the frames, which may hold
     * slices of them, every chunk must be released.
     */
    static List<Frame> decode(List<byte[]> chunks) {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(MAX_FRAME_BYTES));
        List<Frame> frames = new ArrayList<>();
        try {
            for (byte[] chunk : chunks) {
                ByteBuf buffer = Unpooled.buffer(chunk.length).writeBytes(chunk);
                LeakCheck.register(buffer);
                try {
                    channel.writeInbound(buffer);
                } finally {
                    drain(channel, frames);
                }
            }
            channel.finish();
            drain(channel, frames);
            return frames;
        } catch (RuntimeException e) {
            channel.finishAndReleaseAll();
            release(frames);
            throw e;
        }
    }

    static List<Frame> decode(byte[] whole) {
        return decode(List.of(whole));
    }

    static void release(List<Frame> frames) {
        frames.forEach(ReferenceCountUtil::release);
    }

    /** A hand-made frame: header with the true length, then whatever {@code body} writes. */
    static byte[] frame(int type, int flags, Consumer<ByteBuf> body) {
        ByteBuf buffer = Unpooled.buffer();
        buffer.writeInt(0).writeByte(type).writeByte(flags);
        body.accept(buffer);
        buffer.setInt(0, buffer.readableBytes() - Integer.BYTES);
        byte[] bytes = ByteBufUtil.getBytes(buffer);
        buffer.release();
        assertEquals(0, buffer.refCnt());
        return bytes;
    }

    static byte[] concat(List<byte[]> parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        parts.forEach(out::writeBytes);
        return out.toByteArray();
    }

    private static void drain(EmbeddedChannel channel, List<Frame> frames) {
        for (Object frame = channel.readInbound(); frame != null; frame = channel.readInbound()) {
            frames.add((Frame) frame);
        }
    }
}
