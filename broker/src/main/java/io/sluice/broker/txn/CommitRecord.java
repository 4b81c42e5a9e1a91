package io.sluice.broker.txn;

import io.sluice.broker.queue.BrokerQueue;
import io.sluice.storage.QueueIncarnation;

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
 * int32 format (3)
 * | int32 targetCount | targetCount x (string queue | int64 incarnation | int32 count | count x int64 stagedMessageId)
 * | int32 sourceCount | sourceCount x (string queue | int64 incarnation | int32 count | count x int64 messageId)
 * string: uint16 length | UTF-8
 * </pre>
 * A part names its queue's incarnation ({@link QueueIncarnation}) besides its name: a queue deleted and declared again
 * numbers its messages from the start, and a part applies only to the incarnation it was written for (X6). Format 2,
 * the same without incarnations, is still read: its parts carry {@link #UNKNOWN_INCARNATION} and apply only to a queue
 * that predates incarnations ({@link Part#appliesTo}). Format 1, of the broker that staged publishes in the log itself,
 * is not read (see the docs). Immutable.
 */
record CommitRecord(List<Part> targets, List<Part> sources) {
    static final int FORMAT = 3;
    /** The format before incarnations, still read. */
    static final int FORMAT_WITHOUT_INCARNATIONS = 2;
    /** The incarnation of a part of a format 2 record; a queue's own is never 0. */
    static final long UNKNOWN_INCARNATION = 0;

    /**
     * A queue (its name and incarnation) and ids: the staged messages' ids for a target, acknowledged message ids for a
     * source.
     */
    record Part(String queue, long incarnation, long[] ids) {
        Part(BrokerQueue queue, long[] ids) {
            this(queue.name(), queue.transactions().incarnation().id(), ids);
        }

        /**
         * X6: true if this part was written for {@code queue}'s incarnation, not for an earlier queue of its name. A part
         * of a record from before incarnations applies only to a queue that held messages when it was given its
         * incarnation (it existed before them); any other was created since, after every such record was written.
         */
        boolean appliesTo(BrokerQueue queue) {
            QueueIncarnation its = queue.transactions().incarnation();
            return incarnation == UNKNOWN_INCARNATION ? its.predatesIncarnations() : incarnation == its.id();
        }

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
            length += 2 + p.queue().getBytes(StandardCharsets.UTF_8).length + 8 + 4 + 8 * p.ids().length;
        }
        for (Part p : sources) {
            length += 2 + p.queue().getBytes(StandardCharsets.UTF_8).length + 8 + 4 + 8 * p.ids().length;
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
            out.putShort((short) name.length).put(name).putLong(p.incarnation()).putInt(p.ids().length);
            for (long id : p.ids()) {
                out.putLong(id);
            }
        }
    }

    /** Reads a record {@link #encode} wrote; a damaged one is an IllegalArgumentException naming what is wrong. */
    static CommitRecord decode(ByteBuffer in) {
        try {
            int format = in.getInt();
            if (format != FORMAT && format != FORMAT_WITHOUT_INCARNATIONS) {
                throw new IllegalArgumentException("commit record format " + format + " is neither " + FORMAT + " nor "
                        + FORMAT_WITHOUT_INCARNATIONS);
            }
            boolean incarnations = format == FORMAT;
            List<Part> targets = getParts(in, incarnations);
            List<Part> sources = getParts(in, incarnations);
            if (in.hasRemaining()) {
                throw new IllegalArgumentException(in.remaining() + " bytes after the commit record's end");
            }
            return new CommitRecord(targets, sources);
        } catch (java.nio.BufferUnderflowException e) {
            throw new IllegalArgumentException("the commit record is cut short");
        }
    }

    private static List<Part> getParts(ByteBuffer in, boolean incarnations) {
        int count = in.getInt();
        if (count < 0 || count > in.remaining()) {
            throw new IllegalArgumentException("commit record part count " + count + " is impossible");
        }
        List<Part> parts = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            byte[] name = new byte[Short.toUnsignedInt(in.getShort())];
            in.get(name);
            long incarnation = incarnations ? in.getLong() : UNKNOWN_INCARNATION;
            int ids = in.getInt();
            if (ids < 0 || (long) ids * 8 > in.remaining()) {
                throw new IllegalArgumentException("commit record id count " + ids + " is impossible");
            }
            long[] values = new long[ids];
            for (int k = 0; k < ids; k++) {
                values[k] = in.getLong();
            }
            parts.add(new Part(new String(name, StandardCharsets.UTF_8), incarnation, values));
        }
        return parts;
    }
}
