package io.sluice.broker.cluster;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.ReferenceCountUtil;
import io.sluice.protocol.Frame;
import io.sluice.protocol.FrameDecoder;
import io.sluice.protocol.FrameEncoder;

import java.nio.charset.StandardCharsets;

/**
 * One entry of a shard's Raft log: a state change of one queue, as the wire frame that asked for it, with
 * the node and call that submitted it, so the submitting node can answer its client when it applies the
 * entry (every other node applies it with no one to answer).
 *
 * <pre>
 * +---------------+-------------------+------------------------+--------------+---------------------------+
 * | uint8 version | int32 originNode  | int64 originCall       | string queue | frame (wire layout,        |
 * | (1)           | (cluster node id) | (the submitter's call) |              |  docs/protocol.md)         |
 * +---------------+-------------------+------------------------+--------------+---------------------------+
 * </pre>
 *
 * The frame is a DECLARE_QUEUE or DELETE_QUEUE (requestId unused), a PUBLISH (many messages per entry: the
 * client's batch) or an ACK (consumerTag 0; its ranges name message ids of {@code queue}: a consumer's acks,
 * or the ids a purge removed on the leader). Reusing the wire layout
 * means one codec, checked by the protocol's own tests and fuzzers, for both the network and the log.
 * {@code string} is {@code uint16 length} + UTF-8, as on the wire.
 */
record ShardEntry(int originNode, long originCall, String queue, Frame frame) {
    static final int VERSION = 1;

    /** Encodes into a new array (the Raft log keeps it); the caller still owns {@code frame}. */
    static byte[] encode(int originNode, long originCall, String queue, Frame frame, int maxFrameBytes) {
        ByteBuf encoded = FrameEncoder.encode(UnpooledByteBufAllocator.DEFAULT, frame, maxFrameBytes);
        try {
            byte[] name = queue.getBytes(StandardCharsets.UTF_8);
            byte[] out = new byte[1 + Integer.BYTES + Long.BYTES + Short.BYTES + name.length + encoded.readableBytes()];
            ByteBuf header = Unpooled.wrappedBuffer(out);
            header.writerIndex(0);
            header.writeByte(VERSION).writeInt(originNode).writeLong(originCall).writeShort(name.length).writeBytes(name);
            encoded.readBytes(out, header.writerIndex(), encoded.readableBytes());
            return out;
        } finally {
            encoded.release();
        }
    }

    /**
     * Decodes an entry; the frame (a PUBLISH holds a slice of {@code data}) belongs to the caller.
     *
     * @throws IllegalArgumentException an entry of another version, or one that is not a whole frame
     */
    static ShardEntry decode(byte[] data, int maxFrameBytes) {
        ByteBuf in = Unpooled.wrappedBuffer(data);
        try {
            int version = in.readUnsignedByte();
            if (version != VERSION) {
                throw new IllegalArgumentException("shard entry version " + version + " is not " + VERSION
                        + ", the only one this broker reads");
            }
            int node = in.readInt();
            long call = in.readLong();
            int nameLength = in.readUnsignedShort();
            String queue = in.readCharSequence(nameLength, StandardCharsets.UTF_8).toString();
            Frame frame = FrameDecoder.decodeFrame(in, maxFrameBytes); // a PUBLISH retains its own slice of in
            if (frame == null || in.isReadable()) {
                ReferenceCountUtil.release(frame);
                throw new IllegalArgumentException("shard entry of " + data.length + " bytes (first bytes "
                        + ByteBufUtil.hexDump(data, 0, Math.min(16, data.length)) + ") does not end with exactly one frame");
            }
            return new ShardEntry(node, call, queue, frame);
        } catch (IndexOutOfBoundsException | io.sluice.protocol.ProtocolException e) {
            throw new IllegalArgumentException("shard entry of " + data.length + " bytes is damaged: " + e.getMessage(), e);
        } finally {
            in.release();
        }
    }
}
