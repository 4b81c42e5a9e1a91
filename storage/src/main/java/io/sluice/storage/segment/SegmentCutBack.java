package io.sluice.storage.segment;

import io.sluice.storage.StorageException;
import net.openhft.chronicle.queue.ExcerptAppender;
import net.openhft.chronicle.queue.ExcerptTailer;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import net.openhft.chronicle.wire.DocumentContext;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * Rule "an unforced tail is cut back" (docs/storage.md, "Recovery"): writes the replacement of a last segment whose
 * index counts records that are not in the file, holding only its first records, which are there. Chronicle keeps the
 * segment's write position, record count and index in its header and index pages, and offers no way to lower them;
 * editing them by hand would tie the store to Chronicle's file layout. So the records kept are appended, as they are,
 * to a fresh Chronicle file of the same cycle (same segment, so the same ids) in a directory beside the segments, which
 * then takes the segment file's name by a rename ({@link SegmentLog#cutBack}). The directory is the store's own: a
 * crash before the rename leaves it behind, and it is removed at the next open ({@link #discardLeftover}).
 */
public final class SegmentCutBack {
    /** The forces that make a cut-back durable, by the store's forcer. */
    public interface Forces {
        /** Forces {@code file}'s data, before it takes the segment's name. */
        void forceFile(Path file) throws IOException;

        /** Forces {@code directory}'s entries, after the rename. */
        void forceDirectory(Path directory) throws IOException;
    }


    /** Beside the queue's {@code segments} directory. */
    static final String DIRECTORY = "segments.cutback";

    private SegmentCutBack() {
    }

    /** Where the replacement of a segment of {@code segmentDirectory} is written. */
    static Path workDirectory(Path segmentDirectory) {
        return segmentDirectory.resolveSibling(DIRECTORY);
    }

    /**
     * Writes the first {@code keep} records of {@code segment}, read through {@code from}, into a new segment file under
     * {@link #workDirectory}, and returns that file (closed, not forced).
     *
     * @throws StorageException if one of the records to keep cannot be read
     */
    static Path writeReplacement(SegmentLog from, int segment, long keep, long blockBytes) throws IOException {
        Path work = workDirectory(from.segmentDirectory());
        discardLeftover(from.segmentDirectory());
        Files.createDirectories(work);
        RecordCodec codec = new RecordCodec();
        int[] length = new int[1];
        try (SingleChronicleQueue copy = SingleChronicleQueueBuilder.single(work.toFile())
                .rollCycle(SegmentRollCycle.INSTANCE)
                .timeProvider(new SegmentClock(segment))
                .blockSize(blockBytes)
                .checkInterrupts(false)
                .build();
             ExcerptAppender appender = copy.createAppender();
             ExcerptTailer tailer = from.newTailer()) {
            from.position(tailer, SegmentRollCycle.INSTANCE.toIndex(segment, 0));
            for (long sequence = 0; sequence < keep; sequence++) {
                long expected = SegmentRollCycle.INSTANCE.toIndex(segment, sequence);
                if (SegmentRecords.readNext(tailer, codec, length) != expected) {
                    throw new StorageException("segment " + SegmentFiles.file(from.segmentDirectory(), segment) + ": record 0x"
                            + Long.toHexString(expected) + ", to be kept by the cut-back, cannot be read");
                }
                try (DocumentContext dc = appender.writingDocument()) {
                    dc.wire().bytes().write(codec.array(), 0, length[0]);
                }
            }
        }
        return work.resolve(SegmentFiles.fileName(segment));
    }

    /** Removes what a cut-back interrupted by a crash left beside {@code segmentDirectory}; the segment is as it was. */
    public static void discardLeftover(Path segmentDirectory) throws IOException {
        Path work = workDirectory(segmentDirectory);
        if (!Files.exists(work)) {
            return;
        }
        try (Stream<Path> files = Files.walk(work)) {
            for (Path file : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(file);
            }
        }
    }
}
