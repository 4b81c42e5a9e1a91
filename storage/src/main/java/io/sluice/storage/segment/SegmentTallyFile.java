package io.sluice.storage.segment;

import io.sluice.storage.files.AtomicFiles;
import io.sluice.storage.files.ChecksummedFields;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * What a sealed segment holds, kept beside it ({@code <segment file>.tally}) so that a queue opened again need not read
 * the segment to know it: its record count, the message bytes of its records (each record's length less
 * {@link RecordCodec#HEADER_BYTES}, the unit of the broker's byte quotas) and how many of them a transaction staged.
 *
 * <p>A hint, never the truth: written after the segment is sealed, unforced, replaced whole by a rename. A reader
 * trusts it only if its checksum holds and its record count is the one Chronicle counts in the segment; otherwise
 * (missing, torn, from a segment whose tail a machine crash took) the segment is read as before. Layout, little-endian:
 * magic {@code "STLY"}, format version (int, 1), records, message bytes, staged records (longs), CRC32C of the bytes
 * before it (int). Stateless; callers hold the queue's lock.
 */
public final class SegmentTallyFile {
    private static final Logger LOG = LoggerFactory.getLogger(SegmentTallyFile.class);
    public static final String SUFFIX = ".tally";
    private static final int MAGIC = 0x594c5453; // "STLY" read little-endian
    private static final int VERSION = 1;
    private static final int BYTES = ChecksummedFields.OVERHEAD_BYTES + 8 + 8 + 8;

    /** What a segment holds, all of it. */
    public record Tally(long records, long messageBytes, long stagedRecords) {
    }

    private SegmentTallyFile() {
    }

    public static Path file(Path segmentDirectory, int segment) {
        return segmentDirectory.resolve(SegmentFiles.fileName(segment) + SUFFIX);
    }

    /** The tally kept for {@code segment}, or null if there is none, or none that checks out. */
    public static Tally read(Path segmentDirectory, int segment) {
        ByteBuffer buffer = ChecksummedFields.read(file(segmentDirectory, segment), BYTES, MAGIC, VERSION,
                "the segment is read instead");
        return buffer == null || figuresProblem(buffer) != null ? null : tallyOf(buffer);
    }

    /**
     * Why the tally file of {@code segment} does not check out by the rules of {@link #read} (for the offline verify), or
     * null if it is missing or does.
     *
     * @throws IOException if the file cannot be read (not a regular file, say)
     */
    public static ChecksummedFields.Problem problem(Path segmentDirectory, int segment) throws IOException {
        Path file = file(segmentDirectory, segment);
        ChecksummedFields.Problem problem = ChecksummedFields.problem(file, BYTES, MAGIC, VERSION);
        if (problem != null || !Files.exists(file)) {
            return problem;
        }
        String figures = figuresProblem(ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN));
        return figures == null ? null : new ChecksummedFields.Problem(figures, false, false);
    }

    /** Null if the checked buffer's counts are a segment's: none negative, no more staged records than records. */
    private static String figuresProblem(ByteBuffer buffer) {
        Tally t = tallyOf(buffer);
        if (t.records() < 0 || t.messageBytes() < 0 || t.stagedRecords() < 0 || t.stagedRecords() > t.records()) {
            return "its figures are not a segment's (records " + t.records() + ", message bytes " + t.messageBytes()
                    + ", staged " + t.stagedRecords() + ")";
        }
        return null;
    }

    private static Tally tallyOf(ByteBuffer buffer) {
        return new Tally(buffer.getLong(8), buffer.getLong(16), buffer.getLong(24));
    }

    /**
     * Keeps {@code tally} beside {@code segment}. Best effort: a tally that cannot be written only means the
     * segment is read at the next open, so a failure is logged, not thrown.
     */
    public static void write(Path segmentDirectory, int segment, Tally tally) {
        Path file = file(segmentDirectory, segment);
        ByteBuffer buffer = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
        buffer.putInt(MAGIC).putInt(VERSION).putLong(tally.records()).putLong(tally.messageBytes()).putLong(tally.stagedRecords());
        ChecksummedFields.seal(buffer, new CRC32C());
        buffer.position(0).limit(BYTES);
        try {
            Path temporary = AtomicFiles.writeTemporary(file, channel -> AtomicFiles.writeFully(channel, buffer), false);
            AtomicFiles.install(temporary, file);
        } catch (IOException e) {
            LOG.warn("The tally of {} could not be written ({}); the segment will be read when the queue opens again.",
                    SegmentFiles.file(segmentDirectory, segment), e.toString());
        }
    }

    /** Removes the tally of a segment that is being removed; a tally left behind is never read (ids are never reused). */
    public static void delete(Path segmentDirectory, int segment) {
        try {
            Files.deleteIfExists(file(segmentDirectory, segment));
        } catch (IOException e) {
            LOG.debug("The tally of segment {} could not be deleted ({}).", segment, e.toString());
        }
    }
}
