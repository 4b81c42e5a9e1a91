package io.sluice.storage.dedup;

import io.sluice.storage.files.AtomicFiles;

import java.io.IOException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * A queue's producer table as one file, {@code producers.checkpoint} in the queue's directory, and
 * the id of the last record it covers: opening the queue reads it, then replays the records after
 * that id. Stateless.
 *
 * <p><b>Encoding and writing are apart</b>: {@link #encode} runs on the thread that owns the table
 * and copies it into a buffer; {@link #write} may then run on any thread. Writing goes to {@code
 * producers.checkpoint.tmp}, which is fsynced, renamed over the checkpoint, and the directory is
 * fsynced, so the file is always a complete old or a complete new one.
 *
 * <p><b>Layout</b> (big-endian), version 3:
 * <pre>
 *  header (32 bytes): magic "SLPR" int | version int (3) | coveredThroughId long
 *                     | bodyBytes long | CRC32C int | flags int
 *  body: highestEpochGranted int | highestEpochForgotten int
 *        | producerCount int | producerCount x producer, least recently seen first
 *     producer: id long | epoch int | highest long | lastSeenMillis long
 *               | gapCount int | gapCount x (from long, to long)
 * </pre>
 * The CRC32C covers every byte of the file but its own four: the header's first 24 bytes, the flags and
 * the body. Flags: bit 0 ({@link #EPOCH_MARKS_LOST}), the table's epoch marks were lost
 * ({@link ProducerTable#epochMarksLost}); the other bits are 0. A broker from before the flags wrote the int as 0
 * and does not read it, so a file with the bit set still reads there, as a table whose marks are known. Versions 1 and 2 have the same header, with a CRC32C of the body alone, so their
 * header (its {@code coveredThroughId} among it) is taken as it reads; version 3 checks it, since reclaim
 * (rule R6) and the owner's replay both start from that id, and a damaged one that named a later record
 * let reclaim delete segments whose producer records the file does not hold. Version 1 has no epoch
 * marks either: its body starts at {@code producerCount}. Read, both marks are taken as the highest
 * epoch its producers hold, so no instance older than those is let in; what it forgot before is not
 * known, so it reads as a table whose marks were lost.
 *
 * <p>Reading checks magic, version, length and CRC before parsing, and every count against the bytes
 * left, so a damaged file never sizes an allocation.
 */
public final class ProducerCheckpoint {
    public static final String FILE = "producers.checkpoint";
    public static final int MAGIC = 0x534C_5052; // "SLPR"
    public static final int VERSION = 3;
    /** The version before the header's checksum: its CRC32C covers the body alone; still read. */
    static final int VERSION_WITH_UNCHECKED_HEADER = 2;
    /** The first version whose CRC32C covers its header too; every later one does. */
    static final int FIRST_VERSION_WITH_CHECKED_HEADER = 3;
    /** The version before the epoch marks, with the header unchecked too; still read. */
    static final int VERSION_WITHOUT_EPOCH_MARKS = 1;
    /** Where the header keeps the CRC32C. */
    private static final int CRC_OFFSET = 24;
    /** Where the header keeps the flags (version 3; 0 in earlier files). */
    private static final int FLAGS_OFFSET = 28;
    /** Flag: the table's epoch marks were lost ({@link ProducerTable#epochMarksLost}). */
    static final int EPOCH_MARKS_LOST = 1;
    static final int HEADER_BYTES = 32;
    private static final int PRODUCER_FIXED_BYTES = 8 + 4 + 8 + 8 + 4;

    /**
     * A checkpoint as read: the id of the last record it covers (-1: none), the table's epoch marks
     * ({@link ProducerTable#highestEpochGranted}, {@link ProducerTable#highestEpochForgotten}), whether they
     * were lost ({@link ProducerTable#epochMarksLost}), and its producers.
     */
    public record Loaded(long coveredThroughId, int highestEpochGranted, int highestEpochForgotten, boolean epochMarksLost,
                         List<Entry> producers) {
        /** Puts the producers and the epoch marks back into {@code table}, an empty one. */
        public void restoreInto(ProducerTable table) {
            for (Entry e : producers) {
                table.restore(e.id(), e.epoch(), e.highest(), e.lastSeenMillis(), e.gapRanges());
            }
            table.restoreEpochs(highestEpochGranted, highestEpochForgotten);
            if (epochMarksLost) {
                table.loseEpochMarks();
            }
        }
    }

    /** One producer as stored; {@code gapRanges} as in {@link ProducerTable.Producer#gapRanges()}. */
    public record Entry(long id, int epoch, long highest, long lastSeenMillis, long[] gapRanges) {
    }

    private ProducerCheckpoint() {
    }

    /** The file of the queue in {@code queueDirectory}. */
    public static Path file(Path queueDirectory) {
        return queueDirectory.resolve(FILE);
    }

    /** What {@link #coveredThrough} answers when a queue has no checkpoint. */
    public static final long ABSENT = Long.MIN_VALUE;

    /**
     * The id the checkpoint of the queue in {@code queueDirectory} covers records through (the store needs it at
     * open, before the owner reads the file); {@link #ABSENT} if there is no checkpoint; -1 (covers nothing) if the
     * file does not read as {@link #read} reads it. Rule R6 (docs/storage.md, "Reclaim") deletes segments on this
     * answer, so it trusts no more than the owner's read does: a damaged id taken on the header's magic alone would let
     * the store's first pass delete acknowledged segments whose producer records no checkpoint holds.
     */
    public static long coveredThrough(Path queueDirectory) {
        try {
            Loaded loaded = read(queueDirectory);
            return loaded == null ? ABSENT : loaded.coveredThroughId();
        } catch (IOException e) {
            return -1; // a CorruptProducerStateException included: the owner sets the file aside and covers nothing
        }
    }

    /**
     * What the producer state of the queue in {@code queueDirectory} covers as the queue opens, for rule R6
     * (docs/storage.md, "Reclaim"): {@link #coveredThrough}; without a checkpoint, -1 (nothing) if the queue
     * has segments, {@link Long#MAX_VALUE} (none kept) if it has none.
     */
    public static long coveredAtOpen(Path queueDirectory, boolean hasSegments) {
        long covered = coveredThrough(queueDirectory);
        if (covered != ABSENT) {
            return covered;
        }
        // The store's flusher reclaims as soon as the store is open, before the queue's owner replays the records:
        // without a checkpoint (killed between a roll and its first write, or a queue from before producer state),
        // that pass deleted acknowledged segments whose (producer, sequence) nothing else holds, and a resend of
        // one was stored again (ProducerStateAtOpenTest). A queue without segments has nothing to delete.
        return hasSegments ? -1 : Long.MAX_VALUE;
    }

    /** Copies {@code table}, covering the records up to {@code coveredThroughId}, into a complete file image. */
    public static ByteBuffer encode(ProducerTable table, long coveredThroughId) {
        List<ProducerTable.Producer> producers = table.snapshot();
        int bodyBytes = 4 + 4 + 4;
        for (ProducerTable.Producer p : producers) {
            bodyBytes += PRODUCER_FIXED_BYTES + p.gaps.boundCount() * Long.BYTES;
        }
        ByteBuffer image = ByteBuffer.allocate(HEADER_BYTES + bodyBytes);
        image.position(HEADER_BYTES);
        image.putInt(table.highestEpochGranted()).putInt(table.highestEpochForgotten());
        image.putInt(producers.size());
        for (ProducerTable.Producer p : producers) {
            long[] gaps = p.gapRanges();
            image.putLong(p.id).putInt(p.epoch).putLong(p.highest).putLong(p.lastSeenMillis).putInt(gaps.length / 2);
            for (long bound : gaps) {
                image.putLong(bound);
            }
        }
        image.putInt(0, MAGIC).putInt(4, VERSION).putLong(8, coveredThroughId).putLong(16, bodyBytes)
                .putInt(FLAGS_OFFSET, table.epochMarksLost() ? EPOCH_MARKS_LOST : 0);
        image.putInt(CRC_OFFSET, checksum(image.array(), VERSION));
        return image.flip();
    }

    /** The CRC32C a file of {@code version} holds: of everything but itself from version 3 on, of the body alone before. */
    private static int checksum(byte[] file, int version) {
        CRC32C crc = new CRC32C();
        if (version >= FIRST_VERSION_WITH_CHECKED_HEADER) {
            crc.update(file, 0, CRC_OFFSET);
            crc.update(file, CRC_OFFSET + 4, file.length - CRC_OFFSET - 4);
        } else {
            crc.update(file, HEADER_BYTES, file.length - HEADER_BYTES);
        }
        return (int) crc.getValue();
    }

    /** Writes an image from {@link #encode} as the checkpoint of the queue in {@code queueDirectory}, atomically and durably. */
    public static void write(Path queueDirectory, ByteBuffer image) throws IOException {
        AtomicFiles.write(file(queueDirectory), channel -> AtomicFiles.writeFully(channel, image.duplicate()));
    }

    /**
     * Reads the checkpoint of the queue in {@code queueDirectory}; {@code null} if there is none (a
     * queue written before producer tables, or never checkpointed).
     *
     * @throws CorruptProducerStateException naming the file and what did not check out
     */
    public static Loaded read(Path queueDirectory) throws IOException {
        Path file = file(queueDirectory);
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            return null;
        }
        if (bytes.length < HEADER_BYTES) {
            throw new CorruptProducerStateException(file, "it holds " + bytes.length + " bytes, less than its "
                    + HEADER_BYTES + "-byte header");
        }
        ByteBuffer in = ByteBuffer.wrap(bytes);
        if (in.getInt(0) != MAGIC) {
            throw new CorruptProducerStateException(file, String.format("magic 0x%08x, expected 0x%08x", in.getInt(0), MAGIC));
        }
        int version = in.getInt(4);
        if (version != VERSION && version != VERSION_WITH_UNCHECKED_HEADER && version != VERSION_WITHOUT_EPOCH_MARKS) {
            throw new CorruptProducerStateException(file, "format version " + version + ", this broker reads "
                    + VERSION_WITHOUT_EPOCH_MARKS + " to " + VERSION);
        }
        long covered = in.getLong(8);
        long bodyBytes = in.getLong(16);
        if (bodyBytes != bytes.length - HEADER_BYTES) {
            throw new CorruptProducerStateException(file, "the header says " + bodyBytes + " body bytes, the file holds "
                    + (bytes.length - HEADER_BYTES));
        }
        if (checksum(bytes, version) != in.getInt(CRC_OFFSET)) {
            throw new CorruptProducerStateException(file, version >= FIRST_VERSION_WITH_CHECKED_HEADER
                    ? "the CRC32C of its header and body does not match the one it holds"
                    : "the body's CRC32C does not match the header's");
        }
        in.position(HEADER_BYTES);
        try {
            int granted = -1;
            int forgotten = -1;
            if (version != VERSION_WITHOUT_EPOCH_MARKS) {
                granted = in.getInt();
                forgotten = in.getInt();
                if (granted < 0 || forgotten < 0) {
                    throw new CorruptProducerStateException(file, "epoch marks " + granted + " and " + forgotten
                            + " must not be negative");
                }
            }
            int count = in.getInt();
            if (count < 0 || (long) count * PRODUCER_FIXED_BYTES > in.remaining()) {
                throw new CorruptProducerStateException(file, "producer count " + count + " does not fit in "
                        + in.remaining() + " bytes");
            }
            List<Entry> producers = new java.util.ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                long id = in.getLong();
                int epoch = in.getInt();
                long highest = in.getLong();
                long lastSeen = in.getLong();
                int gaps = in.getInt();
                if (gaps < 0 || (long) gaps * 2 * Long.BYTES > in.remaining()) {
                    throw new CorruptProducerStateException(file, "producer " + id + " has gap count " + gaps
                            + ", more than the " + in.remaining() + " bytes left hold");
                }
                long[] ranges = new long[2 * gaps];
                for (int g = 0; g < ranges.length; g++) {
                    ranges[g] = in.getLong();
                }
                producers.add(new Entry(id, epoch, highest, lastSeen, ranges));
            }
            if (in.hasRemaining()) {
                throw new CorruptProducerStateException(file, in.remaining() + " bytes follow the last producer");
            }
            boolean marksLost = version >= FIRST_VERSION_WITH_CHECKED_HEADER
                    && (in.getInt(FLAGS_OFFSET) & EPOCH_MARKS_LOST) != 0;
            if (version == VERSION_WITHOUT_EPOCH_MARKS) {
                for (Entry e : producers) {
                    granted = Math.max(granted, e.epoch());
                }
                granted = Math.max(granted, 0);
                forgotten = granted;
                marksLost = true;
            }
            return new Loaded(covered, granted, forgotten, marksLost, producers);
        } catch (BufferUnderflowException e) {
            throw new CorruptProducerStateException(file, "it ends inside a producer entry");
        }
    }
}
