package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

import java.util.Objects;

/**
 * DECLARE_QUEUE (0x10, client to broker): creates a queue, or checks that an existing one has the same
 * settings. Answered by OK (with the queue's ready message count) or ERROR.
 *
 * <pre>
 * flags: 0x01 PASSIVE - only check that the queue exists; settings are ignored, never applied
 * int64 requestId | string queue | settings (see {@link QueueSettings})
 * </pre>
 */
public record DeclareQueueFrame(long requestId, String queue, QueueSettings settings, boolean passive)
        implements Frame {
    public static final int FLAG_PASSIVE = 0x01;

    public DeclareQueueFrame {
        WireFormat.checkString("queue", queue);
        Objects.requireNonNull(settings, "settings");
    }

    public DeclareQueueFrame(long requestId, String queue, QueueSettings settings) {
        this(requestId, queue, settings, false);
    }

    @Override
    public FrameType type() {
        return FrameType.DECLARE_QUEUE;
    }

    @Override
    public int flags() {
        return passive ? FLAG_PASSIVE : 0;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(requestId);
        WireFormat.writeString(out, queue);
        settings.write(out);
    }

    static DeclareQueueFrame decodeBody(BodyReader reader, int flags) {
        return new DeclareQueueFrame(
                reader.readLong("requestId"),
                reader.readString("queue"),
                QueueSettings.read(reader),
                (flags & FLAG_PASSIVE) != 0);
    }
}
