package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

import java.util.Objects;

/**
 * FLOW (0x23, broker to client): a queue's push-back on publishers changed. Sent on every change of state
 * and once after SUBSCRIBE or the first PUBLISH to a queue that is not FREE.
 *
 * <pre>
 * string queue | uint8 state (0 FREE, 1 SLOWED, 2 BLOCKED) | string reason
 * </pre>
 * {@code reason} names the quota that tripped and its numbers, for example
 * {@code "quotaHardBytes: 1073741824 stored, limit 1073741824"}; empty for FREE.
 */
public record FlowFrame(String queue, FlowState state, String reason) implements Frame {
    public FlowFrame {
        WireFormat.checkString("queue", queue);
        Objects.requireNonNull(state, "state");
        WireFormat.checkString("reason", reason);
    }

    @Override
    public FrameType type() {
        return FrameType.FLOW;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        WireFormat.writeString(out, queue);
        out.writeByte(state.code());
        WireFormat.writeString(out, reason);
    }

    static FlowFrame decodeBody(BodyReader reader) {
        String queue = reader.readString("queue");
        int code = reader.readUnsignedByte("state");
        FlowState state = FlowState.fromCode(code);
        if (state == null) {
            throw reader.malformed("state " + code + " is not one of 0 FREE, 1 SLOWED, 2 BLOCKED");
        }
        return new FlowFrame(queue, state, reader.readString("reason"));
    }
}
