package io.sluice.broker;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.sluice.protocol.Frame;
import io.sluice.protocol.FrameEncoder;

/** A frame's bytes on the wire, for tests that speak to the broker through a plain socket. */
public final class FrameBytes {
    private FrameBytes() {
    }

    /** {@code frame} encoded as the client's codec writes it (up to 8 MiB); the frame itself is left as it was. */
    public static byte[] of(Frame frame) {
        ByteBuf buf = FrameEncoder.encode(ByteBufAllocator.DEFAULT, frame, 8 << 20);
        try {
            byte[] bytes = new byte[buf.readableBytes()];
            buf.readBytes(bytes);
            return bytes;
        } finally {
            buf.release();
        }
    }
}
