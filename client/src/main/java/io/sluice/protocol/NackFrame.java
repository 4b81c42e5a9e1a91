package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

import java.util.List;
import java.util.Objects;

/**
 * NACK (0x34, client to broker): the messages with these ids were not processed; the action says what the
 * broker does with them.
 *
 * <pre>
 * int32 consumerTag | uint8 action (0 REQUEUE, 1 REQUEUE_AFTER_DELAY, 2 REJECT_TO_DEAD_LETTER)
 * | int64 delayMs (&gt;= 0; used only by REQUEUE_AFTER_DELAY, otherwise 0)
 * | int32 rangeCount | rangeCount x (int64 fromMessageId | int64 toMessageId)
 * </pre>
 */
public record NackFrame(int consumerTag, NackAction action, long delayMs, List<IdRange> messageIds)
        implements Frame {
    public NackFrame {
        Objects.requireNonNull(action, "action");
        WireFormat.checkNonNegative("delayMs", delayMs);
        if (action != NackAction.REQUEUE_AFTER_DELAY && delayMs != 0) {
            throw new IllegalArgumentException("delayMs " + delayMs + " must be 0 for action " + action);
        }
        messageIds = WireFormat.checkList("messageIds", messageIds);
    }

    @Override
    public FrameType type() {
        return FrameType.NACK;
    }

    @Override
    public void encodeBody(ByteBuf out) {
        out.writeInt(consumerTag);
        out.writeByte(action.code());
        out.writeLong(delayMs);
        WireFormat.writeRanges(out, messageIds);
    }

    static NackFrame decodeBody(BodyReader reader) {
        int consumerTag = reader.readInt("consumerTag");
        int code = reader.readUnsignedByte("action");
        NackAction action = NackAction.fromCode(code);
        if (action == null) {
            throw reader.malformed("action " + code
                    + " is not one of 0 REQUEUE, 1 REQUEUE_AFTER_DELAY, 2 REJECT_TO_DEAD_LETTER");
        }
        long delayMs = reader.readNonNegativeLong("delayMs");
        if (action != NackAction.REQUEUE_AFTER_DELAY && delayMs != 0) {
            throw reader.malformed("delayMs " + delayMs + " must be 0 for action " + action);
        }
        return new NackFrame(consumerTag, action, delayMs, WireFormat.readRanges(reader));
    }
}
