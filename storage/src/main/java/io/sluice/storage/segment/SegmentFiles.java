package io.sluice.storage.segment;

import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.LocalDateTime;
import java.util.stream.Stream;

/**
 * Names of segment files: segment {@code n} lives in {@code <formatted n seconds after the epoch>.cq4}
 * (see {@link SegmentRollCycle}). Converts both ways, for the store and for the offline tools.
 */
public final class SegmentFiles {
    public static final String SUFFIX = ".cq4";
    /** Suffix of a segment being deleted: renamed first, deleted next, finished on the next open if a crash intervened. */
    public static final String DELETING_SUFFIX = ".cq4.deleting";

    private static final DateTimeFormatter FORMATTER =
            DateTimeFormatter.ofPattern(SegmentRollCycle.FORMAT).withZone(ZoneOffset.UTC);

    private SegmentFiles() {
    }

    public static String fileName(int segment) {
        return FORMATTER.format(Instant.ofEpochMilli((long) segment * SegmentRollCycle.MILLIS_PER_SEGMENT)) + SUFFIX;
    }

    public static Path file(Path segmentDirectory, int segment) {
        return segmentDirectory.resolve(fileName(segment));
    }

    /**
     * A sentence naming segment file {@code file} and what is wrong with it, for a failure of Chronicle reading its header
     * or index ({@code cause}: its "Meta data not ready", or a fault of a mapping past the file's end), which names neither.
     */
    public static String unreadable(Path file, Throwable cause) {
        Throwable root = cause;
        while (!(root instanceof InternalError) && root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String why = root instanceof InternalError ? "a mapped read faulted past the file's end" : cause.toString();
        return "segment file " + file + " cannot be read: it is cut short or damaged in Chronicle's header or index (" + why + ")";
    }

    /**
     * A sentence naming the segment file in {@code segmentDirectory} whose first header is not one Chronicle accepts, for
     * a failure of Chronicle opening the directory (its {@code StreamCorruptedException} "Unexpected magic number", which
     * names no file); null if every segment's first header is one Chronicle accepts (the failure is
     * another). Reads the first 4 bytes of each segment file, only after such a failure.
     */
    public static String damagedHeader(Path segmentDirectory) {
        try (Stream<Path> listed = Files.list(segmentDirectory)) {
            for (Path file : listed.filter(f -> segmentOf(f.getFileName().toString()) >= 0).sorted().toList()) {
                FirstHeader header = FirstHeader.read(file);
                // Zeros or a header not complete are not damage here: a creation a kill cut short, which recovery deletes.
                if (!header.neverCompleted() && !header.accepted()) {
                    return "segment file " + file + " " + header.describe();
                }
            }
        } catch (IOException e) {
            return null;
        }
        return null;
    }

    /**
     * A sentence naming Chronicle's metadata file in {@code segmentDirectory} if it is there and not one Chronicle reads,
     * for the refusal of the queue's open; null if it is missing (Chronicle makes it) or one Chronicle reads. Given any
     * other, Chronicle waited out its timeout twice (20 s) and failed with "Unable to claim exclusive lock", as if another
     * process held the file, and wrote a header of the wrong kind over one of zeros. The file holds no message, only
     * Chronicle's locks and its list of the segment files, which Chronicle makes again.
     */
    public static String damagedMetadata(Path segmentDirectory) {
        Path file = segmentDirectory.resolve(SingleChronicleQueue.QUEUE_METADATA_FILE);
        String what;
        if (!Files.exists(file)) {
            return null;
        } else if (!Files.isRegularFile(file)) {
            what = "is not a regular file";
        } else {
            try {
                FirstHeader header = FirstHeader.read(file);
                if (header.accepted()) {
                    return null;
                }
                what = header.describe();
            } catch (IOException e) {
                return null; // Chronicle's own open of it says what is wrong
            }
        }
        return "Chronicle's metadata file " + file + " " + what + ". The queue is not opened and its files stay as they are;"
                + " the file holds no message (Chronicle's locks and its list of the segment files): moved out of the segment"
                + " directory, it is made again at the next start";
    }

    /**
     * The first header of a Chronicle file (a segment, or {@code metadata.cq4t}) as Chronicle reads it: its first 4 bytes,
     * little-endian, with the file's length. Chronicle accepts complete metadata of at most 64 KiB
     * ({@code AbstractWire.readFirstHeader}); a header of zeros or still marked not complete it waits for, its full
     * timeout (10 s) at every look, and one of anything else stops it with {@code StreamCorruptedException}.
     *
     * @param fileBytes the file's length when its header was read
     * @param word      its first 4 bytes, 0 if it holds fewer
     */
    public record FirstHeader(long fileBytes, int word) {
        private static final int NOT_COMPLETE = 0x8000_0000;
        private static final int META_DATA = 0x4000_0000;
        private static final int LENGTH_MASK = 0x3FFF_FFFF;
        private static final int MAX_FIRST_HEADER_BYTES = 65_536;

        /** Reads the first header of {@code file}. */
        public static FirstHeader read(Path file) throws IOException {
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
                ByteBuffer word = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
                while (word.hasRemaining() && channel.read(word) >= 0) {
                    // read on until 4 bytes or the end of the file
                }
                return new FirstHeader(channel.size(), word.hasRemaining() ? 0 : word.getInt(0));
            }
        }

        /** No header yet: what a creation cut short leaves (no bytes, zeros, or a header still marked not complete). */
        public boolean neverCompleted() {
            return fileBytes < 4 || word == 0 || (word & NOT_COMPLETE) != 0;
        }

        /** A header Chronicle reads: complete metadata of at most 64 KiB, all of it in the file. */
        public boolean accepted() {
            return !neverCompleted() && (word & META_DATA) != 0 && (word & LENGTH_MASK) <= MAX_FIRST_HEADER_BYTES
                    && fileBytes >= 4L + (word & LENGTH_MASK);
        }

        /** What is wrong with it, as the rest of a sentence whose subject is the file; "is sound" if nothing. */
        public String describe() {
            if (fileBytes == 0) {
                return "is empty (0 bytes)";
            }
            if (fileBytes < 4) {
                return "holds " + fileBytes + " bytes, less than Chronicle's first header";
            }
            if (neverCompleted()) {
                return String.format("has no complete first header (its first 4 bytes are 0x%08x, where Chronicle's first header"
                        + " belongs)", word);
            }
            if ((word & META_DATA) == 0 || (word & LENGTH_MASK) > MAX_FIRST_HEADER_BYTES) {
                return "is damaged in its header (unexpected magic 0x" + Integer.toHexString(word)
                        + " where Chronicle's first header belongs)";
            }
            if (!accepted()) {
                return "is cut short in its header (Chronicle's first header says " + (word & LENGTH_MASK) + " bytes, the file"
                        + " holds " + (fileBytes - 4) + " after it)";
            }
            return "is sound";
        }
    }

    /** The segment number of a file name, or -1 if the name is not a segment file's. */
    public static int segmentOf(String fileName) {
        if (!fileName.endsWith(SUFFIX)) {
            return -1;
        }
        String stem = fileName.substring(0, fileName.length() - SUFFIX.length());
        try {
            LocalDateTime time = LocalDateTime.parse(stem, DateTimeFormatter.ofPattern(SegmentRollCycle.FORMAT));
            long seconds = time.toEpochSecond(ZoneOffset.UTC);
            if (seconds < 0 || seconds > Integer.MAX_VALUE) {
                return -1;
            }
            return (int) seconds;
        } catch (DateTimeParseException e) {
            return -1;
        }
    }
}
