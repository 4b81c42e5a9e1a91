package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/** Walks the messages of one {@link PublishFrame}; see {@link MessageCursor} for buffer lifetimes. */
public final class PublishCursor extends MessageCursor {
    private long producerId;
    private long sequence;

    PublishCursor(ByteBuf messages, int messageCount) {
        super(messages, messageCount);
    }

    @Override
    int readLeadingFields(ByteBuf buffer, int index) {
        producerId = buffer.getLong(index);
        sequence = buffer.getLong(index + Long.BYTES);
        return index + 2 * Long.BYTES;
    }

    public long producerId() {
        return producerId;
    }

    public long sequence() {
        return sequence;
    }
}
