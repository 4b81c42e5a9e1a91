package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

import java.util.Objects;
import java.util.OptionalLong;

/**
 * OK (0x13, broker to client): the request with this id succeeded. The generic success reply to
 * DECLARE_QUEUE, DELETE_QUEUE, PURGE_QUEUE, SUBSCRIBE and UNSUBSCRIBE.
 *
 * <pre>
 * flags: 0x01 MESSAGE_COUNT - the int64 messageCount follows
 * int64 requestId | [int64 messageCount]
 * </pre>
 * The message count is the ready messages of a declared queue, or the messages a purge or delete removed.
 */
public record OkFrame(long requestId, OptionalLong messageCount) implements Frame {
    public static final int FLAG_MESSAGE_COUNT = 0x01;

    public OkFrame {
        Objects.requireNonNull(messageCount, "messageCount");
    }

    public OkFrame(long requestId) {
        this(requestId, OptionalLong.empty());
    }

    public OkFrame(long requestId, long messageCount) {
        this(requestId, OptionalLong.of(messageCount));
    }

    @Override
    public FrameType type() {
        return FrameType.OK;
    }

    @Override
    public int flags() {
        return messageCount.isPresent() ? FLAG_MESSAGE_COUNT : 0;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeLong(requestId);
        if (messageCount.isPresent()) {
            out.writeLong(messageCount.getAsLong());
        }
    }

    static OkFrame decodeBody(BodyReader reader, int flags) {
        long requestId = reader.readLong("requestId");
        if ((flags & FLAG_MESSAGE_COUNT) == 0) {
            return new OkFrame(requestId);
        }
        return new OkFrame(requestId, reader.readLong("messageCount"));
    }
}
