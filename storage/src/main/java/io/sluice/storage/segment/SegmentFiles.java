package io.sluice.storage.segment;

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
                Integer header = firstHeader(file);
                if (header != null && !acceptedFirstHeader(header)) {
                    return "segment file " + file + " is damaged in its header (unexpected magic 0x" + Integer.toHexString(header)
                            + " where Chronicle's first header belongs)";
                }
            }
        } catch (IOException e) {
            return null;
        }
        return null;
    }

    /** The file's first 4 bytes as Chronicle reads them (little-endian), null if it holds fewer or cannot be read. */
    private static Integer firstHeader(Path file) {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer word = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
            while (word.hasRemaining() && channel.read(word) >= 0) {
                // read on until 4 bytes or the end of the file
            }
            return word.hasRemaining() ? null : word.getInt(0);
        } catch (IOException e) {
            return null;
        }
    }

    /**
     * Chronicle's check of a file's first header ({@code AbstractWire.readFirstHeader}): complete metadata of at most
     * 64 KiB. A zero or incomplete header is not damage here: it is a creation a kill cut short, which recovery deletes.
     */
    private static boolean acceptedFirstHeader(int header) {
        int notComplete = 0x8000_0000;
        int metaData = 0x4000_0000;
        if (header == 0 || (header & notComplete) != 0) {
            return true;
        }
        return (header & metaData) != 0 && (header & 0x3FFF_FFFF) <= 65_536;
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
