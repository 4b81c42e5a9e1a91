package io.sluice.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.util.ReferenceCountUtil;

import java.util.List;

/**
 * Turns inbound bytes into {@link Frame}s. One instance per connection; runs on the channel's event loop
 * ({@link #maxFrameBytes(int)} may be called from any thread).
 *
 * <pre>
 * +---------------------+-----------------+-------------+----------------------------+
 * | int32 frameLength   | uint8 frameType | uint8 flags | body: frameLength - 2 bytes |
 * +---------------------+-----------------+-------------+----------------------------+
 * </pre>
 *
 * <p>Rule "check before buffering": the header is checked as soon as its bytes arrive, before the decoder
 * waits for the body, in this order:
 * <ol>
 *   <li>{@code frameLength} below 0 or below 2 is MALFORMED_FRAME; above maxFrameBytes is FRAME_TOO_LARGE.
 *       maxFrameBytes bounds {@code frameLength}, the bytes after the length field.</li>
 *   <li>A {@code frameType} below 0x80 that version 1 does not define is UNKNOWN_FRAME_TYPE; one at or
 *       above 0x80 is optional and its whole frame is skipped once it has arrived (see {@link FrameType}).</li>
 *   <li>A flag bit the type does not define is MALFORMED_FRAME.</li>
 * </ol>
 * Then the body is read with every inner length checked against the bytes left ({@link BodyReader}), and a
 * body with bytes left over after its last field is MALFORMED_FRAME.
 *
 * <p>Rule "fail once": the first bad frame raises a {@link ProtocolException} through
 * {@code exceptionCaught} (the only exception this decoder raises for bad input). From then on the decoder
 * discards every inbound byte, so a connection handler can send CLOSE with the exception's code and message
 * and close the channel without decoding garbage. Closing the channel in the middle of a frame raises
 * MALFORMED_FRAME too.
 *
 * <p>Ownership: non-batch frames hold no buffer. {@link PublishFrame}, {@link TxPublishFrame} and
 * {@link DeliverFrame} hold a retained slice of the inbound bytes, released by whoever consumes them. Nothing
 * else is retained.
 */
public final class FrameDecoder extends ByteToMessageDecoder {
    /** Bytes of the length field. */
    public static final int LENGTH_FIELD_BYTES = Integer.BYTES;
    /** The smallest legal frameLength: the type and flags bytes. */
    public static final int MIN_FRAME_LENGTH = 2;

    private volatile int maxFrameBytes;
    private boolean failed;

    /**
     * @param maxFrameBytes the largest frameLength accepted; lower it to the negotiated value after HELLO_OK
     */
    public FrameDecoder(int maxFrameBytes) {
        this.maxFrameBytes = checkMaxFrameBytes(maxFrameBytes);
    }

    public int maxFrameBytes() {
        return maxFrameBytes;
    }

    public void maxFrameBytes(int maxFrameBytes) {
        this.maxFrameBytes = checkMaxFrameBytes(maxFrameBytes);
    }

    @Override
    protected void decode(ChannelHandlerContext context, ByteBuf in, List<Object> out) {
        if (failed) {
            in.skipBytes(in.readableBytes());
            return;
        }
        try {
            Frame frame = decodeFrame(in, maxFrameBytes);
            if (frame != null) {
                out.add(frame);
            }
        } catch (ProtocolException e) {
            fail(in);
            throw e;
        } catch (RuntimeException e) {
            fail(in);
            throw new ProtocolException(ErrorCode.MALFORMED_FRAME, "frame could not be decoded: " + e.getMessage());
        }
    }

    @Override
    protected void decodeLast(ChannelHandlerContext context, ByteBuf in, List<Object> out) throws Exception {
        decode(context, in, out);
        if (in.isReadable() && !failed) {
            int pending = in.readableBytes();
            fail(in);
            throw new ProtocolException(ErrorCode.MALFORMED_FRAME,
                    "connection closed with " + pending + " bytes of an incomplete frame");
        }
    }

    /**
     * Decodes at most one frame from {@code in}. Returns {@code null} when more bytes are needed, or when an
     * optional frame was skipped (then {@code in} has advanced). Usable without a pipeline, e.g. in
     * benchmarks; throws only {@link ProtocolException} for bad input.
     */
    public static Frame decodeFrame(ByteBuf in, int maxFrameBytes) {
        int readable = in.readableBytes();
        if (readable < LENGTH_FIELD_BYTES) {
            return null;
        }
        int start = in.readerIndex();
        int frameLength = in.getInt(start);
        checkFrameLength(frameLength, maxFrameBytes);
        if (readable < LENGTH_FIELD_BYTES + 1) {
            return null;
        }
        int typeCode = in.getUnsignedByte(start + LENGTH_FIELD_BYTES);
        FrameType type = FrameType.fromCode(typeCode);
        if (type == null && !FrameType.isOptional(typeCode)) {
            throw new ProtocolException(ErrorCode.UNKNOWN_FRAME_TYPE, "frame type " + FrameType.hex(typeCode)
                    + " is unknown and below " + FrameType.hex(FrameType.FIRST_OPTIONAL_CODE)
                    + ", the first optional type, so it cannot be skipped");
        }
        if (readable < LENGTH_FIELD_BYTES + 2) {
            return null;
        }
        int flags = in.getUnsignedByte(start + LENGTH_FIELD_BYTES + 1);
        if (type != null && (flags & ~type.definedFlags()) != 0) {
            throw new ProtocolException(ErrorCode.MALFORMED_FRAME, type + " flags " + FrameType.hex(flags)
                    + " set bits outside the defined mask " + FrameType.hex(type.definedFlags()));
        }
        if (readable < LENGTH_FIELD_BYTES + frameLength) {
            return null;
        }
        in.skipBytes(LENGTH_FIELD_BYTES + MIN_FRAME_LENGTH);
        ByteBuf body = in.readSlice(frameLength - MIN_FRAME_LENGTH);
        if (type == null) {
            return null;
        }
        BodyReader reader = new BodyReader(type, body);
        Frame frame = decodeBody(type, flags, reader);
        try {
            reader.requireFullyRead();
        } catch (ProtocolException e) {
            ReferenceCountUtil.release(frame);
            throw e;
        }
        return frame;
    }

    private static Frame decodeBody(FrameType type, int flags, BodyReader reader) {
        return switch (type) {
            case HELLO -> HelloFrame.decodeBody(reader, flags);
            case HELLO_OK -> HelloOkFrame.decodeBody(reader, flags);
            case HEARTBEAT -> HeartbeatFrame.INSTANCE;
            case CLOSE -> CloseFrame.decodeBody(reader);
            case DECLARE_QUEUE -> DeclareQueueFrame.decodeBody(reader, flags);
            case DELETE_QUEUE -> DeleteQueueFrame.decodeBody(reader);
            case PURGE_QUEUE -> PurgeQueueFrame.decodeBody(reader);
            case OK -> OkFrame.decodeBody(reader, flags);
            case ERROR -> ErrorFrame.decodeBody(reader);
            case PUBLISH -> PublishFrame.decodeBody(reader);
            case CONFIRM -> ConfirmFrame.decodeBody(reader);
            case PUBLISH_ERROR -> PublishErrorFrame.decodeBody(reader);
            case FLOW -> FlowFrame.decodeBody(reader);
            case PUBLISH_CREDIT -> PublishCreditFrame.decodeBody(reader);
            case PRODUCER_INIT -> ProducerInitFrame.decodeBody(reader);
            case PRODUCER_OK -> ProducerOkFrame.decodeBody(reader);
            case SUBSCRIBE -> SubscribeFrame.decodeBody(reader);
            case CREDIT -> CreditFrame.decodeBody(reader);
            case DELIVER -> DeliverFrame.decodeBody(reader);
            case ACK -> AckFrame.decodeBody(reader);
            case NACK -> NackFrame.decodeBody(reader);
            case UNSUBSCRIBE -> UnsubscribeFrame.decodeBody(reader);
            case TX_BEGIN -> TxBeginFrame.decodeBody(reader);
            case TX_PUBLISH -> TxPublishFrame.decodeBody(reader);
            case TX_ACK -> TxAckFrame.decodeBody(reader);
            case TX_COMMIT -> TxCommitFrame.decodeBody(reader);
            case TX_ROLLBACK -> TxRollbackFrame.decodeBody(reader);
            case TX_ABORTED -> TxAbortedFrame.decodeBody(reader);
        };
    }

    private static void checkFrameLength(int frameLength, int maxFrameBytes) {
        if (frameLength < 0) {
            throw new ProtocolException(ErrorCode.MALFORMED_FRAME, "frame length " + frameLength + " is negative");
        }
        if (frameLength < MIN_FRAME_LENGTH) {
            throw new ProtocolException(ErrorCode.MALFORMED_FRAME, "frame length " + frameLength
                    + " is below the minimum of " + MIN_FRAME_LENGTH + " (frame type and flags)");
        }
        if (frameLength > maxFrameBytes) {
            throw new ProtocolException(ErrorCode.FRAME_TOO_LARGE, "frame length " + frameLength
                    + " exceeds maxFrameBytes " + maxFrameBytes);
        }
    }

    static int checkMaxFrameBytes(int maxFrameBytes) {
        if (maxFrameBytes < MIN_FRAME_LENGTH) {
            throw new IllegalArgumentException("maxFrameBytes " + maxFrameBytes + " is below the minimum of "
                    + MIN_FRAME_LENGTH);
        }
        return maxFrameBytes;
    }

    private void fail(ByteBuf in) {
        failed = true;
        in.skipBytes(in.readableBytes());
    }
}
