package io.sluice.broker.cluster;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.sluice.broker.queue.Replication.TransactionPart;
import io.sluice.protocol.IdRange;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A committed transaction's whole effect as one shard entry (rule R13 of docs/replication.md): what it publishes to each
 * queue and which ids of each queue it acknowledges. Raft commits the entry or not, as a whole, so every node holds all
 * of the transaction or none of it. Version {@value #VERSION}, which needs entry level {@value #LEVEL} (rule R12):
 *
 * <pre>
 * | uint8 version (7) | int32 originNode | int64 originCall | string queue ("") | int64 transaction | int32 parts
 * | parts x part |
 * part: | string queue | int32 n | n x (int32 headersLength | headers | int32 payloadLength | payload)
 *       | int32 ranges | ranges x (int64 from | int64 to) |
 * </pre>
 *
 * The header is {@link ShardEntry}'s (its queue is empty: the parts name theirs); {@code transaction} is the leader's
 * number for it, for the logs. A message's identity in its queue is the entry's log index and its place among the
 * entry's messages to that queue ({@link #firstSequence}), so the entry never travels in a batch (its index is its own).
 *
 * <p>Threads: pure functions; thread-safe.
 */
final class TransactionEntry {
    static final int VERSION = 7;
    /** The entry level a transaction entry needs (rule R12). */
    static final int LEVEL = 6;
    /** Messages one entry may publish to one queue: their sequences are the log index shifted by this many bits, plus their place. */
    static final int SEQUENCE_BITS = 20;
    static final int MAX_MESSAGES_PER_QUEUE = (1 << SEQUENCE_BITS) - 1;

    private TransactionEntry() {
    }

    /** A decoded entry: node {@code originNode}'s call {@code originCall} commits transaction {@code transaction}. */
    record Decoded(int originNode, long originCall, long transaction, List<TransactionPart> parts) {
    }

    static boolean is(byte[] data) {
        return data.length > 0 && (data[0] & 0xff) == VERSION;
    }

    /** The bytes the entry of {@code parts} takes, without encoding it. */
    static long encodedLength(List<TransactionPart> parts) {
        long size = 1 + 4 + 8 + 2 + 8 + 4;
        for (TransactionPart part : parts) {
            size += 2 + part.queue().getBytes(StandardCharsets.UTF_8).length + 4 + 4 + 16L * part.acks().size();
            for (int i = 0; i < part.headers().size(); i++) {
                size += 8 + part.headers().get(i).length + part.payloads().get(i).length;
            }
        }
        return size;
    }

    static byte[] encode(int originNode, long originCall, long transaction, List<TransactionPart> parts) {
        long length = encodedLength(parts);
        if (length > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("a transaction entry of " + length + " bytes does not fit an array");
        }
        ByteBuf out = Unpooled.buffer((int) length);
        out.writeByte(VERSION).writeInt(originNode).writeLong(originCall).writeShort(0).writeLong(transaction).writeInt(parts.size());
        for (TransactionPart part : parts) {
            byte[] name = part.queue().getBytes(StandardCharsets.UTF_8);
            out.writeShort(name.length).writeBytes(name).writeInt(part.headers().size());
            for (int i = 0; i < part.headers().size(); i++) {
                out.writeInt(part.headers().get(i).length).writeBytes(part.headers().get(i))
                        .writeInt(part.payloads().get(i).length).writeBytes(part.payloads().get(i));
            }
            out.writeInt(part.acks().size());
            for (IdRange range : part.acks()) {
                out.writeLong(range.from()).writeLong(range.to());
            }
        }
        return out.array();
    }

    /** @throws IllegalArgumentException a damaged entry (every node meets the same bytes, and skips it alike) */
    static Decoded decode(byte[] data) {
        ByteBuf in = Unpooled.wrappedBuffer(data);
        try {
            if (in.readUnsignedByte() != VERSION) {
                throw new IllegalArgumentException("not a transaction entry");
            }
            int node = in.readInt();
            long call = in.readLong();
            in.skipBytes(in.readUnsignedShort());
            long transaction = in.readLong();
            int count = in.readInt();
            checkCount(count, in, 2 + 4 + 4);
            List<TransactionPart> parts = new ArrayList<>(count);
            for (int p = 0; p < count; p++) {
                String queue = in.readCharSequence(in.readUnsignedShort(), StandardCharsets.UTF_8).toString();
                int messages = in.readInt();
                checkCount(messages, in, 8);
                List<byte[]> headers = new ArrayList<>(messages);
                List<byte[]> payloads = new ArrayList<>(messages);
                for (int i = 0; i < messages; i++) {
                    headers.add(bytes(in));
                    payloads.add(bytes(in));
                }
                int ranges = in.readInt();
                checkCount(ranges, in, 16);
                List<IdRange> acks = new ArrayList<>(ranges);
                for (int i = 0; i < ranges; i++) {
                    acks.add(new IdRange(in.readLong(), in.readLong()));
                }
                parts.add(new TransactionPart(queue, headers, payloads, acks));
            }
            if (in.isReadable()) {
                throw new IllegalArgumentException(in.readableBytes() + " bytes after its last part");
            }
            return new Decoded(node, call, transaction, parts);
        } catch (IndexOutOfBoundsException | IllegalArgumentException e) {
            throw new IllegalArgumentException("transaction entry of " + data.length + " bytes is damaged: " + e.getMessage(), e);
        }
    }

    /**
     * The sequence of the first of the entry's messages to a queue, {@code before} of them already placed in earlier
     * parts: unique per message and increasing in log order, so the queue's producer table tells a replayed one.
     */
    static long firstSequence(long logIndex, int before) {
        return (logIndex << SEQUENCE_BITS) + before + 1;
    }

    private static void checkCount(int count, ByteBuf in, int minBytesEach) {
        if (count < 0 || (long) count * minBytesEach > in.readableBytes()) {
            throw new IllegalArgumentException("a count of " + count + " with " + in.readableBytes() + " bytes left");
        }
    }

    private static byte[] bytes(ByteBuf in) {
        int length = in.readInt();
        if (length < 0 || length > in.readableBytes()) {
            throw new IllegalArgumentException("a field of " + length + " bytes with " + in.readableBytes() + " left");
        }
        byte[] out = new byte[length];
        in.readBytes(out);
        return out;
    }
}
