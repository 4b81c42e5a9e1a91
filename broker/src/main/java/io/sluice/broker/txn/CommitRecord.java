package io.sluice.broker.txn;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The commit of one transaction, as its one record in the transaction log: which messages it staged
 * in which queue (their ids there), and which deliveries of which queues it acknowledges. Once this
 * record is durable the transaction is committed: at a restart its staged messages are visible and
 * its acknowledgements applied again (docs/transactions.md, "Recovery").
 *
 * <pre>
 * int32 format (2)
 * | int32 targetCount | targetCount x (string queue | int32 count | count x int64 stagedMessageId)
 * | int32 sourceCount | sourceCount x (string queue | int32 count | count x int64 messageId)
 * string: uint16 length | UTF-8
 * </pre>
 * Format 1, of the broker that staged publishes in the log itself, is not read (see the docs). Immutable.
 */
record CommitRecord(List<Part> targets, List<Part> sources) {
    static final int FORMAT = 2;

    /** A queue and ids: the staged messages' ids for a target, acknowledged message ids for a source. */
    record Part(String queue, long[] ids) {
        /** The highest id listed, or -1. */
        long highestId() {
            long highest = -1;
            for (long id : ids) {
                highest = Math.max(highest, id);
            }
            return highest;
        }
    }

    int encodedLength() {
        int length = 4 + 4 + 4;
        for (Part p : targets) {
            length += 2 + p.queue().getBytes(StandardCharsets.UTF_8).length + 4 + 8 * p.ids().length;
        }
        for (Part p : sources) {
            length += 2 + p.queue().getBytes(StandardCharsets.UTF_8).length + 4 + 8 * p.ids().length;
        }
        return length;
    }

    ByteBuffer encode() {
        ByteBuffer out = ByteBuffer.allocate(encodedLength());
        out.putInt(FORMAT);
        putParts(out, targets);
        putParts(out, sources);
        return out.flip();
    }

    private static void putParts(ByteBuffer out, List<Part> parts) {
        out.putInt(parts.size());
        for (Part p : parts) {
            byte[] name = p.queue().getBytes(StandardCharsets.UTF_8);
            out.putShort((short) name.length).put(name).putInt(p.ids().length);
            for (long id : p.ids()) {
                out.putLong(id);
            }
        }
    }

    /** Reads a record {@link #encode} wrote; a damaged one is an IllegalArgumentException naming what is wrong. */
    static CommitRecord decode(ByteBuffer in) {
        try {
            int format = in.getInt();
            if (format != FORMAT) {
                throw new IllegalArgumentException("commit record format " + format + " is not " + FORMAT);
            }
            List<Part> targets = getParts(in);
            List<Part> sources = getParts(in);
            if (in.hasRemaining()) {
                throw new IllegalArgumentException(in.remaining() + " bytes after the commit record's end");
            }
            return new CommitRecord(targets, sources);
        } catch (java.nio.BufferUnderflowException e) {
            throw new IllegalArgumentException("the commit record is cut short");
        }
    }

    private static List<Part> getParts(ByteBuffer in) {
        int count = in.getInt();
        if (count < 0 || count > in.remaining()) {
            throw new IllegalArgumentException("commit record part count " + count + " is impossible");
        }
        List<Part> parts = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            byte[] name = new byte[Short.toUnsignedInt(in.getShort())];
            in.get(name);
            int ids = in.getInt();
            if (ids < 0 || (long) ids * 8 > in.remaining()) {
                throw new IllegalArgumentException("commit record id count " + ids + " is impossible");
            }
            long[] values = new long[ids];
            for (int k = 0; k < ids; k++) {
                values[k] = in.getLong();
            }
            parts.add(new Part(new String(name, StandardCharsets.UTF_8), values));
        }
        return parts;
    }
}
