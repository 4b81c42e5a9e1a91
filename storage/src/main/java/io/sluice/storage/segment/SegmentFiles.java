package io.sluice.storage.segment;

import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.LocalDateTime;

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
