package io.sluice.broker.cluster;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.ReferenceCountUtil;
import io.sluice.broker.queue.ProducerEpochs;
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
 *
 * <p>Version 2 is a dead-letter (rule R8 of docs/replication.md), which no wire frame says: the leader's
 * decision to move message {@code sourceId} of queue {@code source} to {@code queue}, its dead-letter queue, as
 * the copy the leader built (its headers name the reason and the delivery count, which only the leader knows),
 * so that every node stores the same bytes. {@code frame} is then null and {@code deadLetter} says it:
 *
 * <pre>
 * | uint8 version (2) | int32 originNode | int64 originCall | string queue | string source | int64 sourceId
 * | int64 producerId | int64 producerSequence | int32 headersLength | headers | int32 payloadLength | payload |
 * </pre>
 *
 * {@code producerId} and {@code producerSequence} are the original's; every node stores the copy under the entry's
 * own identity instead (the producer reserved for replicated dead-letters and the entry's log index), so that a
 * replay stores it once ({@link io.sluice.broker.queue.BrokerQueue#applyForwarded}).
 *
 * <p>Version 3 is the deliveries of one dispatch on the leader (rule R10), so that every node keeps the delivery
 * counts a new leader delivers with: message {@code ids[i]} of {@code queue} was delivered for the {@code counts[i]}-th
 * time. {@code frame} is then null and {@code deliveries} says it:
 *
 * <pre>
 * | uint8 version (3) | int32 originNode | int64 originCall | string queue | int32 n | n x (int64 id, int32 count) |
 * </pre>
 *
 * <p>Version 4 is a PUBLISH of named producers (rule R11): version 1's layout with, before the frame, the epochs the
 * leader resolved for them when it admitted the frame ({@link ProducerEpochs}), so that every node fences alike:
 *
 * <pre>
 * | uint8 version (4) | int32 originNode | int64 originCall | string queue | uint16 count
 * | count x (int64 producerId, int32 epoch) | frame (a PUBLISH) |
 * </pre>
 *
 * A frame of unnamed producers only is written as version 1, as before. From entry level
 * {@value #ADMITTED_WITHOUT_EPOCH_LEVEL} an epoch may be {@link ProducerEpochs#ADMITTED_WITHOUT_EPOCH}: a leader whose
 * producer table lost its epoch marks admitted that producer unchecked, and every node checks it at its own table's epoch
 * (a broker below that level would read it as an epoch that fences). A broker reads all four versions. Version 5 is
 * no shard entry but a Raft entry holding several ({@link EntryBatch}). Each version needs the entry level of its number
 * ({@link EntryLevels}): a broker that meets a version above the level it supports stops applying the log rather than
 * skip it (brokers before levels skipped it, and diverged).
 */
record ShardEntry(int originNode, long originCall, String queue, Frame frame, DeadLetterCopy deadLetter, Deliveries deliveries,
                  ProducerEpochs epochs) {
    static final int VERSION = 1;
    static final int DEAD_LETTER_VERSION = 2;
    static final int DELIVERED_VERSION = 3;
    static final int NAMED_PUBLISH_VERSION = 4;
    /** The entry level from which a version-4 entry's epochs may hold {@link ProducerEpochs#ADMITTED_WITHOUT_EPOCH} (rule R12). */
    static final int ADMITTED_WITHOUT_EPOCH_LEVEL = 8;
    /** Deliveries per entry at most: 12 bytes each. */
    static final int MAX_DELIVERIES = 4096;

    ShardEntry(int originNode, long originCall, String queue, Frame frame) {
        this(originNode, originCall, queue, frame, null, null, ProducerEpochs.NONE);
    }

    /** Deliveries of one dispatch on the leader (rule R10): {@code ids[i]} delivered for the {@code counts[i]}-th time. */
    record Deliveries(long[] ids, int[] counts) {
    }

    /** Encodes a deliveries entry (version 3) of the first {@code n} of {@code ids} and {@code counts} into a new array. */
    static byte[] encodeDeliveries(int originNode, long originCall, String queue, long[] ids, int[] counts, int n) {
        byte[] name = queue.getBytes(StandardCharsets.UTF_8);
        ByteBuf out = Unpooled.buffer(1 + 4 + 8 + 2 + name.length + 4 + n * 12);
        out.writeByte(DELIVERED_VERSION).writeInt(originNode).writeLong(originCall).writeShort(name.length).writeBytes(name)
                .writeInt(n);
        for (int i = 0; i < n; i++) {
            out.writeLong(ids[i]).writeInt(counts[i]);
        }
        return ByteBufUtil.getBytes(out);
    }

    private static ShardEntry decodeDeliveries(ByteBuf in, int node, long call, String queue) {
        int n = in.readInt();
        if (n < 0 || n > MAX_DELIVERIES || in.readableBytes() != n * 12L) {
            throw new IllegalArgumentException("deliveries shard entry of " + n + " deliveries has " + in.readableBytes()
                    + " bytes for them (12 each, at most " + MAX_DELIVERIES + ")");
        }
        long[] ids = new long[n];
        int[] counts = new int[n];
        for (int i = 0; i < n; i++) {
            ids[i] = in.readLong();
            counts[i] = in.readInt();
        }
        return new ShardEntry(node, call, queue, null, null, new Deliveries(ids, counts), ProducerEpochs.NONE);
    }

    /** A dead-letter's copy (rule R8): what every node stores in the dead-letter queue for message {@code sourceId} of {@code source}. */
    record DeadLetterCopy(String source, long sourceId, long producerId, long producerSequence, byte[] headers, byte[] payload) {
        /** The copy of {@code original} of queue {@code source} with {@code headers} (the dead-letter's), copied out of their buffers. */
        static DeadLetterCopy of(String source, io.sluice.storage.StoredMessage original, java.nio.ByteBuffer headers) {
            byte[] copyHeaders = new byte[headers.remaining()];
            headers.duplicate().get(copyHeaders);
            return new DeadLetterCopy(source, original.id(), original.producerId(), original.producerSequence(), copyHeaders,
                    original.payloadBytes());
        }
    }

    /** Encodes a dead-letter entry (version 2) into a new array. */
    static byte[] encodeDeadLetter(int originNode, long originCall, String deadLetterQueue, DeadLetterCopy copy) {
        byte[] name = deadLetterQueue.getBytes(StandardCharsets.UTF_8);
        byte[] source = copy.source().getBytes(StandardCharsets.UTF_8);
        ByteBuf out = Unpooled.buffer(1 + 4 + 8 + 2 + name.length + 2 + source.length + 3 * 8 + 4 + copy.headers().length
                + 4 + copy.payload().length);
        out.writeByte(DEAD_LETTER_VERSION).writeInt(originNode).writeLong(originCall)
                .writeShort(name.length).writeBytes(name).writeShort(source.length).writeBytes(source)
                .writeLong(copy.sourceId()).writeLong(copy.producerId()).writeLong(copy.producerSequence())
                .writeInt(copy.headers().length).writeBytes(copy.headers()).writeInt(copy.payload().length).writeBytes(copy.payload());
        return ByteBufUtil.getBytes(out);
    }

    private static ShardEntry decodeDeadLetter(ByteBuf in, int node, long call, String queue) {
        String source = in.readCharSequence(in.readUnsignedShort(), StandardCharsets.UTF_8).toString();
        long sourceId = in.readLong();
        long producerId = in.readLong();
        long producerSequence = in.readLong();
        byte[] headers = new byte[in.readInt()];
        in.readBytes(headers);
        byte[] payload = new byte[in.readInt()];
        in.readBytes(payload);
        if (in.isReadable()) {
            throw new IllegalArgumentException("dead-letter shard entry has " + in.readableBytes() + " bytes after its payload");
        }
        return new ShardEntry(node, call, queue, null, new DeadLetterCopy(source, sourceId, producerId, producerSequence, headers, payload),
                null, ProducerEpochs.NONE);
    }

    /** Encodes into a new array (the Raft log keeps it); the caller still owns {@code frame}. */
    static byte[] encode(int originNode, long originCall, String queue, Frame frame, int maxFrameBytes) {
        return encode(originNode, originCall, queue, frame, ProducerEpochs.NONE, maxFrameBytes);
    }

    /** As above; a PUBLISH with named producers' {@code epochs} is written as version 3. */
    static byte[] encode(int originNode, long originCall, String queue, Frame frame, ProducerEpochs epochs, int maxFrameBytes) {
        ByteBuf encoded = FrameEncoder.encode(UnpooledByteBufAllocator.DEFAULT, frame, maxFrameBytes);
        try {
            byte[] name = queue.getBytes(StandardCharsets.UTF_8);
            int epochBytes = epochs.size() == 0 ? 0 : Short.BYTES + epochs.size() * (Long.BYTES + Integer.BYTES);
            byte[] out = new byte[1 + Integer.BYTES + Long.BYTES + Short.BYTES + name.length + epochBytes + encoded.readableBytes()];
            ByteBuf header = Unpooled.wrappedBuffer(out);
            header.writerIndex(0);
            header.writeByte(epochBytes == 0 ? VERSION : NAMED_PUBLISH_VERSION).writeInt(originNode).writeLong(originCall)
                    .writeShort(name.length).writeBytes(name);
            if (epochBytes > 0) {
                header.writeShort(epochs.size());
                for (int i = 0; i < epochs.size(); i++) {
                    header.writeLong(epochs.producerId(i)).writeInt(epochs.epoch(i));
                }
            }
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
            if (version < VERSION || version > NAMED_PUBLISH_VERSION) {
                throw new IllegalArgumentException("shard entry version " + version + " is not one of " + VERSION + " to "
                        + NAMED_PUBLISH_VERSION + ", the ones this broker reads");
            }
            int node = in.readInt();
            long call = in.readLong();
            int nameLength = in.readUnsignedShort();
            String queue = in.readCharSequence(nameLength, StandardCharsets.UTF_8).toString();
            if (version == DEAD_LETTER_VERSION) {
                return decodeDeadLetter(in, node, call, queue);
            }
            if (version == DELIVERED_VERSION) {
                return decodeDeliveries(in, node, call, queue);
            }
            ProducerEpochs epochs = ProducerEpochs.NONE;
            if (version == NAMED_PUBLISH_VERSION) {
                int count = in.readUnsignedShort();
                long[] ids = new long[count];
                int[] values = new int[count];
                for (int i = 0; i < count; i++) {
                    ids[i] = in.readLong();
                    values[i] = in.readInt();
                }
                epochs = new ProducerEpochs(ids, values);
            }
            Frame frame = FrameDecoder.decodeFrame(in, maxFrameBytes); // a PUBLISH retains its own slice of in
            if (frame == null || in.isReadable() || version == NAMED_PUBLISH_VERSION && !(frame instanceof io.sluice.protocol.PublishFrame)) {
                ReferenceCountUtil.release(frame);
                throw new IllegalArgumentException("shard entry of " + data.length + " bytes (first bytes "
                        + ByteBufUtil.hexDump(data, 0, Math.min(16, data.length)) + ") does not end with exactly one frame"
                        + (version == NAMED_PUBLISH_VERSION ? ", a PUBLISH" : ""));
            }
            return new ShardEntry(node, call, queue, frame, null, null, epochs);
        } catch (IndexOutOfBoundsException | io.sluice.protocol.ProtocolException e) {
            throw new IllegalArgumentException("shard entry of " + data.length + " bytes is damaged: " + e.getMessage(), e);
        } finally {
            in.release();
        }
    }
}
