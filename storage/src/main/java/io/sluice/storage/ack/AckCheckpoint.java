package io.sluice.storage.ack;

import io.sluice.storage.files.AtomicFiles;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.zip.CRC32C;
import java.util.zip.CheckedOutputStream;

/**
 * Writes and reads the whole ack state of a queue as one file, {@code acks.checkpoint}. Stateless;
 * callers hold the queue's lock so the tracker does not change while it is written.
 *
 * <p><b>Writing</b> goes to {@code acks.checkpoint.tmp}, which is fsynced, renamed over {@code
 * acks.checkpoint}, and then the directory is fsynced: at every instant the checkpoint file is a
 * complete old one or a complete new one. A new queue's checkpoint takes the same steps one at a
 * time ({@link #writeUnforced}, a force by the caller, {@link #install}), so that a group of new
 * queues forces all its files together, after writing all of them.
 *
 * <p><b>Layout</b> (big-endian), version 2:
 *
 * <pre>
 *  0        4        8                16               24       28       32
 *  +--------+--------+----------------+----------------+--------+--------+
 *  | magic  |version |   generation   |   bodyBytes    | CRC32C |reserved|   header
 *  |"SLAC"  |   2    |     (long)     |    (long)      |        |   0    |
 *  +--------+--------+----------------+----------------+--------+--------+
 *  body:
 *  +---------------------+--------------+
 *  | highestKnownSegment | segmentCount |   int, int
 *  +---------------------+--------------+
 *  segmentCount times, segments increasing:
 *  +---------+--------------+----------+------------------------------------------+
 *  | segment | messageCount | runCount | runCount runs over the bitmap words        |
 *  |  int    |    long      |   int    |                                          |
 *  +---------+--------------+----------+------------------------------------------+
 *  run:  +------+-----------+--------------------------------------+
 *        | kind | wordCount | wordCount longs, only for kind 2       |
 *        | byte |   int     |                                      |
 *        +------+-----------+--------------------------------------+
 *        kind 0: words all zero (nothing acked)   kind 1: words all ones (all acked)
 *        kind 2: literal words (bit i of word w = seq 64*w+i acked)
 *  the runs of a segment cover exactly ceil(messageCount / 64) words.
 *  +---------------+------------------------------------+
 *  | deliveryCount | deliveryCount x (id long, count int) |
 *  +---------------+------------------------------------+
 *  | relocationCount | relocationCount x (originalId long, newId long) |
 *  +-----------------+-------------------------------------------------+
 * </pre>
 *
 * <p>The CRC32C covers every byte of the file but its own four: the body, then the header's first 24 bytes and
 * its reserved int (in that order, so that the writer streams the body once). Version 1 has the same layout with
 * a CRC32C of the body alone, so its header is taken as it reads; version 2 checks it, since the generation decides
 * whether the journal is replayed: a damaged one above the journal's would make recovery ignore the journal (its acks
 * lost, their messages delivered again), one below it would refuse the queue as if the checkpoint had been replaced.
 *
 * <p>Acked prefixes and untouched tails cost 5 bytes a run, so the file is about one bit per message
 * of the ragged middle and far less for the rest.
 *
 * <p><b>Reading</b> first checks magic, version, length and the CRC32C in one streaming pass,
 * and only then parses, so that no count read from a damaged file sizes an allocation.
 */
public final class AckCheckpoint {
    public static final int MAGIC = 0x534C_4143; // "SLAC"
    public static final int VERSION = 2;
    /** The version before the header's checksum: its CRC32C covers the body alone; still read, never written. */
    static final int VERSION_WITH_UNCHECKED_HEADER = 1;
    /** The first version whose CRC32C covers its header too; every later one does. */
    static final int FIRST_VERSION_WITH_CHECKED_HEADER = 2;
    public static final int HEADER_BYTES = 32;
    /** Where the header keeps the CRC32C. */
    private static final int CRC_OFFSET = 24;

    private static final byte RUN_ZEROS = 0;
    private static final byte RUN_ONES = 1;
    private static final byte RUN_LITERAL = 2;

    /** A checkpoint as read: its generation and the state it holds. */
    public record Loaded(long generation, AckTracker tracker) {
    }

    private AckCheckpoint() {
    }

    /** Writes {@code tracker} as generation {@code generation} to {@code file}, atomically and durably. */
    public static void write(Path file, long generation, AckTracker tracker) throws IOException {
        AtomicFiles.write(file, channel -> writeContent(channel, generation, tracker));
    }

    /**
     * The first step of a write in steps (a new queue's, {@link NewAckFiles#prepare}): writes the file
     * under its temporary name, which it returns, without forcing it. The caller forces it, then calls
     * {@link #install}, then forces the directory.
     */
    static Path writeUnforced(Path file, long generation, AckTracker tracker) throws IOException {
        return AtomicFiles.writeTemporary(file, channel -> writeContent(channel, generation, tracker), false);
    }

    /** Renames a forced temporary file over {@code file}: its entry is durable once the directory is forced. */
    static void install(Path temporary, Path file) throws IOException {
        AtomicFiles.install(temporary, file);
    }

    /** The body streamed after the header's room, then the header, whose length the body gave and whose CRC covers both. */
    private static void writeContent(FileChannel channel, long generation, AckTracker tracker) throws IOException {
        CRC32C crc = new CRC32C();
        channel.position(HEADER_BYTES);
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(
                new CheckedOutputStream(Channels.newOutputStream(channel), crc), 1 << 16));
        writeBody(out, tracker);
        out.flush();
        long bodyBytes = channel.position() - HEADER_BYTES;
        ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES);
        header.putInt(MAGIC).putInt(VERSION).putLong(generation).putLong(bodyBytes).putInt(0).putInt(0);
        addHeader(crc, header.array());
        header.putInt(CRC_OFFSET, (int) crc.getValue()).flip();
        while (header.hasRemaining()) {
            channel.write(header, header.position());
        }
    }

    /** Adds to {@code crc}, which has the body, the header's bytes but its CRC's: what a version from 2 on checks. */
    private static void addHeader(CRC32C crc, byte[] header) {
        crc.update(header, 0, CRC_OFFSET);
        crc.update(header, CRC_OFFSET + Integer.BYTES, HEADER_BYTES - CRC_OFFSET - Integer.BYTES);
    }

    /**
     * Reads a checkpoint.
     *
     * @throws CorruptAckStateException naming the file and offset when anything does not check out
     */
    public static Loaded read(Path file) throws IOException {
        long fileBytes = Files.size(file);
        if (fileBytes < HEADER_BYTES) {
            throw new CorruptAckStateException(file, fileBytes, "checkpoint of " + fileBytes + " bytes is shorter than its "
                    + HEADER_BYTES + "-byte header");
        }
        ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            while (header.hasRemaining() && channel.read(header, header.position()) >= 0) {
                // read until full
            }
        }
        header.flip();
        int magic = header.getInt(0);
        if (magic != MAGIC) {
            throw new CorruptAckStateException(file, 0, String.format("checkpoint magic 0x%08x, expected 0x%08x", magic, MAGIC));
        }
        int version = header.getInt(4);
        if (version != VERSION && version != VERSION_WITH_UNCHECKED_HEADER) {
            throw new CorruptAckStateException(file, 4, "checkpoint format version " + version + ", this broker reads "
                    + VERSION_WITH_UNCHECKED_HEADER + " and " + VERSION);
        }
        long generation = header.getLong(8);
        long bodyBytes = header.getLong(16);
        if (bodyBytes != fileBytes - HEADER_BYTES) {
            throw new CorruptAckStateException(file, 16, "header says bodyBytes " + bodyBytes + " but the file holds "
                    + (fileBytes - HEADER_BYTES) + " bytes after the header");
        }
        int storedCrc = header.getInt(CRC_OFFSET);
        CRC32C crc = bodyCrc(file);
        if (version >= FIRST_VERSION_WITH_CHECKED_HEADER) {
            addHeader(crc, header.array());
            if (storedCrc != (int) crc.getValue()) {
                throw new CorruptAckStateException(file, CRC_OFFSET, String.format(
                        "CRC32C 0x%08x of its header and body does not match the 0x%08x stored here",
                        (int) crc.getValue(), storedCrc));
            }
        } else if (storedCrc != (int) crc.getValue()) {
            throw new CorruptAckStateException(file, HEADER_BYTES, String.format(
                    "body CRC32C 0x%08x over bytes %d..%d does not match 0x%08x stored at offset %d",
                    (int) crc.getValue(), HEADER_BYTES, fileBytes - 1, storedCrc, CRC_OFFSET));
        }
        try (CountingInputStream counting = new CountingInputStream(
                new BufferedInputStream(Files.newInputStream(file), 1 << 16))) {
            counting.skipFully(HEADER_BYTES);
            return new Loaded(generation, readBody(file, new DataInputStream(counting), counting, bodyBytes));
        }
    }

    private static void writeBody(DataOutputStream out, AckTracker tracker) throws IOException {
        out.writeInt(tracker.highestKnownSegment());
        Map<Integer, SegmentAckBitmap> segments = tracker.segmentsForCheckpoint();
        out.writeInt(segments.size());
        for (Map.Entry<Integer, SegmentAckBitmap> entry : segments.entrySet()) {
            SegmentAckBitmap bitmap = entry.getValue();
            out.writeInt(entry.getKey());
            out.writeLong(bitmap.messageCount());
            writeRuns(out, bitmap);
        }
        out.writeInt(tracker.deliveryEntryCount());
        IOException[] failure = new IOException[1];
        tracker.forEachDelivery((id, count) -> {
            try {
                out.writeLong(id);
                out.writeInt(count);
            } catch (IOException e) {
                failure[0] = e;
            }
        });
        out.writeInt(tracker.relocationEntryCount());
        tracker.forEachRelocation((originalId, newId) -> {
            try {
                out.writeLong(originalId);
                out.writeLong(newId);
            } catch (IOException e) {
                failure[0] = e;
            }
        });
        if (failure[0] != null) {
            throw failure[0];
        }
    }

    private static void writeRuns(DataOutputStream out, SegmentAckBitmap bitmap) throws IOException {
        int words = bitmap.wordCount();
        int runs = 0;
        for (int i = 0; i < words; i = runEnd(bitmap, i, words)) {
            runs++;
        }
        out.writeInt(runs);
        for (int i = 0; i < words; ) {
            int end = runEnd(bitmap, i, words);
            long word = bitmap.word(i);
            byte kind = word == 0 ? RUN_ZEROS : word == -1L ? RUN_ONES : RUN_LITERAL;
            out.writeByte(kind);
            out.writeInt(end - i);
            if (kind == RUN_LITERAL) {
                for (int w = i; w < end; w++) {
                    out.writeLong(bitmap.word(w));
                }
            }
            i = end;
        }
    }

    /** End (exclusive) of the run starting at {@code start}: uniform words, or literal words up to the next uniform one. */
    private static int runEnd(SegmentAckBitmap bitmap, int start, int words) {
        long first = bitmap.word(start);
        int end = start + 1;
        if (first == 0 || first == -1L) {
            while (end < words && bitmap.word(end) == first) {
                end++;
            }
        } else {
            while (end < words && bitmap.word(end) != 0 && bitmap.word(end) != -1L) {
                end++;
            }
        }
        return end;
    }

    private static AckTracker readBody(Path file, DataInputStream in, CountingInputStream counting, long bodyBytes) throws IOException {
        long end = HEADER_BYTES + bodyBytes;
        AckTracker tracker = new AckTracker();
        try {
            int highest = in.readInt();
            long offset = counting.position();
            int segmentCount = in.readInt();
            if (segmentCount < 0 || segmentCount > (end - counting.position()) / 16) {
                throw new CorruptAckStateException(file, offset, "segmentCount " + segmentCount + " does not fit the body");
            }
            int previous = -1;
            for (int s = 0; s < segmentCount; s++) {
                offset = counting.position();
                int segment = in.readInt();
                long messageCount = in.readLong();
                if (segment <= previous || segment > highest) {
                    throw new CorruptAckStateException(file, offset, "segment " + segment + " is not above the previous segment "
                            + previous + " or is above highestKnownSegment " + highest);
                }
                if (messageCount < 0 || messageCount > SegmentAckBitmap.MAX_MESSAGE_COUNT) {
                    throw new CorruptAckStateException(file, offset + 4, "messageCount " + messageCount + " of segment " + segment
                            + " is outside 0.." + SegmentAckBitmap.MAX_MESSAGE_COUNT);
                }
                long[] words = readRuns(file, in, counting, end, segment, SegmentAckBitmap.wordsFor(messageCount));
                try {
                    tracker.restoreSegment(segment, SegmentAckBitmap.restore(messageCount, words));
                } catch (IllegalArgumentException e) {
                    throw new CorruptAckStateException(file, offset, "segment " + segment + ": " + e.getMessage());
                }
                previous = segment;
            }
            tracker.restoreHighestKnownSegment(highest);
            offset = counting.position();
            int deliveries = in.readInt();
            if (deliveries < 0 || deliveries > (end - counting.position()) / 12) {
                throw new CorruptAckStateException(file, offset, "delivery count entries " + deliveries + " do not fit the body");
            }
            for (int i = 0; i < deliveries; i++) {
                offset = counting.position();
                long id = in.readLong();
                int count = in.readInt();
                if (id < 0 || count < 1) {
                    throw new CorruptAckStateException(file, offset, "delivery entry id " + id + " count " + count + " is invalid");
                }
                tracker.restoreDelivery(id, count);
            }
            offset = counting.position();
            int relocations = in.readInt();
            if (relocations < 0 || relocations > (end - counting.position()) / 16) {
                throw new CorruptAckStateException(file, offset, "relocation entries " + relocations + " do not fit the body");
            }
            for (int i = 0; i < relocations; i++) {
                offset = counting.position();
                long originalId = in.readLong();
                long newId = in.readLong();
                if (originalId < 0 || newId < 0) {
                    throw new CorruptAckStateException(file, offset, "relocation " + originalId + " -> " + newId + " is invalid");
                }
                tracker.restoreRelocation(originalId, newId);
            }
            if (counting.position() != end) {
                throw new CorruptAckStateException(file, counting.position(), "body has " + (end - counting.position())
                        + " bytes after the last field");
            }
        } catch (EOFException e) {
            throw new CorruptAckStateException(file, counting.position(), "body ends early");
        }
        return tracker;
    }

    private static long[] readRuns(Path file, DataInputStream in, CountingInputStream counting, long end, int segment, int wordCount)
            throws IOException {
        long offset = counting.position();
        int runs = in.readInt();
        if (runs < 0 || runs > wordCount) {
            throw new CorruptAckStateException(file, offset, "runCount " + runs + " of segment " + segment
                    + " is outside 0.." + wordCount);
        }
        long[] words = new long[wordCount];
        int filled = 0;
        for (int r = 0; r < runs; r++) {
            offset = counting.position();
            byte kind = in.readByte();
            int length = in.readInt();
            if (length < 1 || length > wordCount - filled) {
                throw new CorruptAckStateException(file, offset, "run of " + length + " words in segment " + segment
                        + " overflows its " + wordCount + " words (" + filled + " filled)");
            }
            switch (kind) {
                case RUN_ZEROS -> filled += length;
                case RUN_ONES -> {
                    java.util.Arrays.fill(words, filled, filled + length, -1L);
                    filled += length;
                }
                case RUN_LITERAL -> {
                    for (int w = 0; w < length; w++) {
                        words[filled++] = in.readLong();
                    }
                }
                default -> throw new CorruptAckStateException(file, offset, "run kind " + kind + " in segment " + segment
                        + " is not 0, 1 or 2");
            }
        }
        if (filled != wordCount) {
            throw new CorruptAckStateException(file, counting.position(), "runs of segment " + segment + " cover " + filled
                    + " words, expected " + wordCount);
        }
        return words;
    }

    private static CRC32C bodyCrc(Path file) throws IOException {
        CRC32C crc = new CRC32C();
        ByteBuffer buffer = ByteBuffer.allocate(1 << 16);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            channel.position(HEADER_BYTES);
            while (channel.read(buffer) >= 0) {
                buffer.flip();
                crc.update(buffer);
                buffer.clear();
            }
        }
        return crc;
    }

    /** Tracks the file offset of the next byte, so that errors can name it. */
    private static final class CountingInputStream extends FilterInputStream {
        private long position;

        CountingInputStream(InputStream in) {
            super(in);
        }

        long position() {
            return position;
        }

        void skipFully(long bytes) throws IOException {
            for (long left = bytes; left > 0; ) {
                if (read() < 0) {
                    throw new EOFException();
                }
                left--;
            }
        }

        @Override
        public int read() throws IOException {
            int b = super.read();
            if (b >= 0) {
                position++;
            }
            return b;
        }

        @Override
        public int read(byte[] buffer, int offset, int length) throws IOException {
            int n = super.read(buffer, offset, length);
            if (n > 0) {
                position += n;
            }
            return n;
        }
    }
}
