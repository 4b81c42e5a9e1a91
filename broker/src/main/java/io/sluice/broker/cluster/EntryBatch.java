package io.sluice.broker.cluster;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * A Raft entry that holds several {@link ShardEntry} encodings, submitted together ({@link EntryCoalescer}), so
 * that Raft's per-entry costs (its log write and force, its RPC, its CRC, the apply) are paid once for them:
 *
 * <pre>
 * | uint8 version (5) | uint16 count | count x (int32 length | a shard entry of version 1, 3 or 4) |
 * </pre>
 *
 * Every node applies the entries inside in their order, each as if it were an entry of its own (rule R2 of
 * docs/replication.md), so batching changes neither ids nor outcomes. A dead-letter (version 2) never travels in a
 * batch: its copy's identity is its entry's log index (rule R8), which two of them in one batch would share. A
 * batch needs entry level 5 ({@link EntryLevels}).
 */
final class EntryBatch {
    static final int VERSION = 5;
    /** Entries per batch at most (the count is a uint16; the coalescer's byte cap ends a batch long before). */
    static final int MAX_ENTRIES = 4096;
    /** What the batch adds around its entries: the version and count, then a length per entry. */
    static final int HEADER_BYTES = 1 + Short.BYTES;
    static final int PER_ENTRY_BYTES = Integer.BYTES;

    private EntryBatch() {
    }

    static boolean isBatch(byte[] data) {
        return data.length > 0 && (data[0] & 0xff) == VERSION;
    }

    /** Encodes {@code entries} (at least two, at most {@link #MAX_ENTRIES}, none a dead-letter) into one new array. */
    static byte[] encode(List<byte[]> entries) {
        if (entries.size() < 2 || entries.size() > MAX_ENTRIES) {
            throw new IllegalArgumentException("a batch holds 2 to " + MAX_ENTRIES + " entries, not " + entries.size());
        }
        int size = HEADER_BYTES;
        for (byte[] entry : entries) {
            if (!batchable(entry)) {
                throw new IllegalArgumentException("a shard entry of version " + (entry.length == 0 ? -1 : entry[0] & 0xff)
                        + " cannot travel in a batch");
            }
            size += PER_ENTRY_BYTES + entry.length;
        }
        ByteBuffer out = ByteBuffer.allocate(size);
        out.put((byte) VERSION).putShort((short) entries.size());
        for (byte[] entry : entries) {
            out.putInt(entry.length).put(entry);
        }
        return out.array();
    }

    /**
     * Whether {@code entry} may be put in a batch: any shard entry but a dead-letter, a level entry (it takes effect at a
     * log entry of its own) or a batch.
     */
    static boolean batchable(byte[] entry) {
        if (entry.length == 0) {
            return false;
        }
        int version = entry[0] & 0xff;
        return version != ShardEntry.DEAD_LETTER_VERSION && version != VERSION && version != EntryLevels.LEVEL_ENTRY_VERSION
                && version != TransactionEntry.VERSION // R13: its messages' identity is its own log index
                && version != ClusterSettings.VERSION; // R2: the cluster's settings, recorded at an entry of their own
    }

    /** The entries of a batch, or none if it is damaged (every node skips a damaged batch alike). */
    static List<byte[]> entriesOrEmpty(byte[] data) {
        try {
            return decode(data);
        } catch (IllegalArgumentException e) {
            return List.of();
        }
    }

    /**
     * The entries of a batch, in order.
     *
     * @throws IllegalArgumentException a damaged batch, or one holding an entry that may not travel in a batch
     */
    static List<byte[]> decode(byte[] data) {
        ByteBuffer in = ByteBuffer.wrap(data);
        try {
            int version = in.get() & 0xff;
            if (version != VERSION) {
                throw new IllegalArgumentException("entry version " + version + " is no batch (" + VERSION + ")");
            }
            int count = in.getShort() & 0xffff;
            if (count < 2 || count > MAX_ENTRIES) {
                throw new IllegalArgumentException("a batch of " + count + " entries (2 to " + MAX_ENTRIES + ")");
            }
            List<byte[]> entries = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                int length = in.getInt();
                if (length < 1 || length > in.remaining()) {
                    throw new IllegalArgumentException("entry " + i + " of the batch claims " + length + " bytes, "
                            + in.remaining() + " remain");
                }
                byte[] entry = new byte[length];
                in.get(entry);
                if (!batchable(entry)) {
                    throw new IllegalArgumentException("entry " + i + " of the batch is of version " + (entry[0] & 0xff)
                            + ", which never travels in a batch");
                }
                entries.add(entry);
            }
            if (in.hasRemaining()) {
                throw new IllegalArgumentException("a batch of " + count + " entries has " + in.remaining() + " bytes after them");
            }
            return entries;
        } catch (java.nio.BufferUnderflowException e) {
            throw new IllegalArgumentException("a batch entry of " + data.length + " bytes is damaged", e);
        }
    }
}
