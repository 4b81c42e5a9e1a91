package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * HEARTBEAT (0x03, both ways): proves the connection is alive when no other frame was sent for one heartbeat
 * interval. The body is empty; the frame is the six bytes {@code 00 00 00 02 03 00}.
 */
public record HeartbeatFrame() implements Frame {
    public static final HeartbeatFrame INSTANCE = new HeartbeatFrame();

    @Override
    public FrameType type() {
        return FrameType.HEARTBEAT;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        // The body is empty by definition.
    }
}
