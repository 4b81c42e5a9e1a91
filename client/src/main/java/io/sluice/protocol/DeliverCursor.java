package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/** Walks the messages of one {@link DeliverFrame}; see {@link MessageCursor} for buffer lifetimes. */
public final class DeliverCursor extends MessageCursor {
    private long messageId;
    private int deliveryCount;

    DeliverCursor(ByteBuf messages, int messageCount) {
        super(messages, messageCount);
    }

    @Override
    int readLeadingFields(ByteBuf buffer, int index) {
        messageId = buffer.getLong(index);
        deliveryCount = buffer.getInt(index + Long.BYTES);
        return index + Long.BYTES + Integer.BYTES;
    }

    public long messageId() {
        return messageId;
    }

    /** 1 on the first delivery, then one more for each redelivery. */
    public int deliveryCount() {
        return deliveryCount;
    }
}
