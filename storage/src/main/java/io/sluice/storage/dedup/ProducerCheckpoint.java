package io.sluice.storage.dedup;

import io.sluice.storage.files.AtomicFiles;

import java.io.IOException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
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
 * <p><b>Layout</b> (big-endian), version 2:
 * <pre>
 *  header (32 bytes): magic "SLPR" int | version int (2) | coveredThroughId long
 *                     | bodyBytes long | CRC32C of body int | reserved int (0)
 *  body: highestEpochGranted int | highestEpochForgotten int
 *        | producerCount int | producerCount x producer, least recently seen first
 *     producer: id long | epoch int | highest long | lastSeenMillis long
 *               | gapCount int | gapCount x (from long, to long)
 * </pre>
 * Version 1 has no epoch marks: its body starts at {@code producerCount}. Read, both marks are
 * taken as the highest epoch its producers hold, so no instance older than those is let in; what it
 * forgot before is not known.
 *
 * <p>Reading checks magic, version, length and CRC before parsing, and every count against the bytes
 * left, so a damaged file never sizes an allocation.
 */
public final class ProducerCheckpoint {
    public static final String FILE = "producers.checkpoint";
    public static final int MAGIC = 0x534C_5052; // "SLPR"
    public static final int VERSION = 2;
    /** The version before the epoch marks; still read. */
    static final int VERSION_WITHOUT_EPOCH_MARKS = 1;
    static final int HEADER_BYTES = 32;
    private static final int PRODUCER_FIXED_BYTES = 8 + 4 + 8 + 8 + 4;

    /**
     * A checkpoint as read: the id of the last record it covers (-1: none), the table's epoch marks
     * ({@link ProducerTable#highestEpochGranted}, {@link ProducerTable#highestEpochForgotten}) and its
     * producers.
     */
    public record Loaded(long coveredThroughId, int highestEpochGranted, int highestEpochForgotten, List<Entry> producers) {
        /** Puts the producers and the epoch marks back into {@code table}, an empty one. */
        public void restoreInto(ProducerTable table) {
            for (Entry e : producers) {
                table.restore(e.id(), e.epoch(), e.highest(), e.lastSeenMillis(), e.gapRanges());
            }
            table.restoreEpochs(highestEpochGranted, highestEpochForgotten);
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
     * The id the checkpoint of the queue in {@code queueDirectory} covers records through, read from
     * its header alone (the store needs it at open, before the owner reads the whole file); {@link
     * #ABSENT} if there is no checkpoint; -1 (covers nothing) if the header cannot be read.
     */
    public static long coveredThrough(Path queueDirectory) {
        ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES);
        try (FileChannel channel = FileChannel.open(file(queueDirectory), StandardOpenOption.READ)) {
            while (header.hasRemaining() && channel.read(header) >= 0) {
                // read until full or at the end
            }
        } catch (NoSuchFileException e) {
            return ABSENT;
        } catch (IOException e) {
            return -1;
        }
        return header.position() == HEADER_BYTES && header.getInt(0) == MAGIC ? header.getLong(8) : -1;
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
        CRC32C crc = new CRC32C();
        crc.update(image.array(), HEADER_BYTES, bodyBytes);
        image.putInt(0, MAGIC).putInt(4, VERSION).putLong(8, coveredThroughId).putLong(16, bodyBytes)
                .putInt(24, (int) crc.getValue()).putInt(28, 0);
        return image.flip();
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
        if (version != VERSION && version != VERSION_WITHOUT_EPOCH_MARKS) {
            throw new CorruptProducerStateException(file, "format version " + version + ", this broker reads "
                    + VERSION_WITHOUT_EPOCH_MARKS + " and " + VERSION);
        }
        long covered = in.getLong(8);
        long bodyBytes = in.getLong(16);
        if (bodyBytes != bytes.length - HEADER_BYTES) {
            throw new CorruptProducerStateException(file, "the header says " + bodyBytes + " body bytes, the file holds "
                    + (bytes.length - HEADER_BYTES));
        }
        CRC32C crc = new CRC32C();
        crc.update(bytes, HEADER_BYTES, (int) bodyBytes);
        if ((int) crc.getValue() != in.getInt(24)) {
            throw new CorruptProducerStateException(file, "the body's CRC32C does not match the header's");
        }
        in.position(HEADER_BYTES);
        try {
            int granted = -1;
            int forgotten = -1;
            if (version == VERSION) {
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
            if (version == VERSION_WITHOUT_EPOCH_MARKS) {
                for (Entry e : producers) {
                    granted = Math.max(granted, e.epoch());
                }
                granted = Math.max(granted, 0);
                forgotten = granted;
            }
            return new Loaded(covered, granted, forgotten, producers);
        } catch (BufferUnderflowException e) {
            throw new CorruptProducerStateException(file, "it ends inside a producer entry");
        }
    }
}
