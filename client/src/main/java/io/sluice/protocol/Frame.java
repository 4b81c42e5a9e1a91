package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

/**
 * One protocol frame, as {@link FrameDecoder} produces it and {@link FrameEncoder} consumes it.
 *
 * <p>Every frame on the wire is a header followed by a type-specific body:
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * |                    int32 frameLength                          |
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * | uint8 frameType | uint8 flags |  body (frameLength - 2 bytes) ...
 * +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 * </pre>
 * All integers are big-endian. {@code frameLength} counts the bytes after itself, so it is at least 2.
 *
 * <p>Only {@link PublishFrame}, {@link TxPublishFrame} and {@link DeliverFrame} hold a buffer; every other frame
 * is a plain value.
 */
public sealed interface Frame
        permits HelloFrame, HelloOkFrame, HeartbeatFrame, CloseFrame,
        DeclareQueueFrame, DeleteQueueFrame, PurgeQueueFrame, OkFrame, ErrorFrame,
        PublishFrame, ConfirmFrame, PublishErrorFrame, FlowFrame, PublishCreditFrame,
        ProducerInitFrame, ProducerOkFrame,
        SubscribeFrame, CreditFrame, DeliverFrame, AckFrame, NackFrame, UnsubscribeFrame,
        TxBeginFrame, TxPublishFrame, TxAckFrame, TxCommitFrame, TxRollbackFrame, TxAbortedFrame {

    FrameType type();

    /** The flags byte; zero unless the frame type defines flags. */
    default int flags() {
        return 0;
    }

    /** Appends the body (everything after the flags byte) to {@code out}. */
    void encodeBody(ByteBuf out);
}
