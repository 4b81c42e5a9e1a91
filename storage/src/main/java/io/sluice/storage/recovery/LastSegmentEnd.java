package io.sluice.storage.recovery;

import io.sluice.storage.StorageException;
import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.durability.ForcedMark;
import io.sluice.storage.segment.RecordCodec;
import io.sluice.storage.segment.SegmentCutBack;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.SegmentLog;
import io.sluice.storage.segment.SegmentRecords;
import io.sluice.storage.segment.SegmentRollCycle;
import net.openhft.chronicle.queue.ExcerptTailer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Rule "what the index counts is there" and its exception, rule "an unforced tail is cut back" (docs/storage.md,
 * "Recovery"). The last record Chronicle's index counts in the last segment must be in the file. A file cut short (a
 * partial copy, a file system that lost its tail) keeps the index, near its start, counting records whose bytes are
 * gone; opened anyway, the queue counted them in its backlog, its readers stopped for good at the first missing one, and
 * every message appended after the open, confirmed, was stored behind that gap and never delivered. So such a queue is
 * refused, with one exception: a machine crash whose write-back put the header and index pages on disk before the pages
 * of the records appended since the last force leaves the same shape with nothing confirmed missing. When the forced
 * mark names this very file and every record through it is there and intact, what is missing was never forced, so
 * never confirmed, and the segment is cut back to its records before the first gap.
 *
 * <p>Checked before the ack state is told the segments' counts, so that a cut-back is what a machine crash that took the
 * tail with the header leaves: the ack state forgets what it knew of the cut records (a segment holding fewer records
 * than the checkpoint saw is truncated, and the journal's records about records not there are skipped, {@code AckLog}),
 * and checkpoints before the queue is served, so the ids of the cut records, which appends give again, start with no
 * ack state. And a segment restored from a backup after a refusal finds the ack state it belongs to.
 */
final class LastSegmentEnd {
    private static final Logger LOG = LoggerFactory.getLogger(LastSegmentEnd.class);

    private final String queue;
    private final Path queueDirectory;
    private final SegmentLog log;
    private final int segment;
    private final Path file;

    private LastSegmentEnd(String queue, Path queueDirectory, SegmentLog log, int segment) {
        this.queue = queue;
        this.queueDirectory = queueDirectory;
        this.log = log;
        this.segment = segment;
        this.file = SegmentFiles.file(log.segmentDirectory(), segment);
    }

    /**
     * Checks the end of {@code lastSegment} and cuts an unforced tail back (forced through {@code forcer}); returns true
     * if it cut.
     *
     * @throws StorageException if records are missing that may have been confirmed: the queue must not be opened
     */
    static boolean check(String queue, Path queueDirectory, SegmentLog log, int lastSegment, FileForcer forcer) throws IOException {
        return new LastSegmentEnd(queue, queueDirectory, log, lastSegment).check(forcer);
    }

    private boolean check(FileForcer forcer) throws IOException {
        long records = log.indexedRecords(segment);
        if (records <= 0 || readable(SegmentRollCycle.INSTANCE.toIndex(segment, records - 1))) {
            return false;
        }
        ForcedMark.Mark mark = ForcedMark.readFor(queueDirectory, segment, file);
        if (mark == null) {
            throw refusal(records, "No forced mark names this segment file, so the records missing may have been confirmed");
        }
        long forced = SegmentRollCycle.INSTANCE.toSequenceNumber(mark.index()) + 1;
        long present = recordsBeforeFirstGap(forced);
        if (present < forced) {
            throw refusal(records, "Record 0x" + Long.toHexString(SegmentRollCycle.INSTANCE.toIndex(segment, present))
                    + " is missing or damaged, and the forced mark says a force made every record through 0x"
                    + Long.toHexString(mark.index()) + " durable: a confirmed message is missing");
        }
        log.cutBack(segment, present, forces(forcer));
        LOG.warn("Queue '{}': a machine crash lost the unforced tail of segment {}: Chronicle's index counts {} records, the "
                + "first {} are in the file, every record through the forced mark 0x{} among them. Cut the segment back to "
                + "those {}: the {} records cut were never forced, so never confirmed.",
                queue, file, records, present, Long.toHexString(mark.index()), present, records - present);
        return true;
    }

    /** True if record {@code id} is in the file. */
    private boolean readable(long id) {
        try {
            return log.read(id) >= 0;
        } catch (InternalError | AssertionError | IllegalStateException e) {
            // A mapping past the file's end faults (InternalError), Chronicle's own assertions, when enabled, trip on an
            // index entry pointing at nothing, and an index cut short is "Meta data not ready": the record is not there.
            return false;
        }
    }

    /**
     * How many records the segment holds from its first on, up to the first one missing; a record before {@code forced}
     * (the count through the forced mark) that fails its checksum ends them too, since a forced record is never torn.
     */
    private long recordsBeforeFirstGap(long forced) {
        RecordCodec codec = new RecordCodec();
        int[] length = new int[1];
        long present = 0;
        try (ExcerptTailer tailer = log.newTailer()) {
            log.position(tailer, SegmentRollCycle.INSTANCE.toIndex(segment, 0));
            while (SegmentRecords.readNext(tailer, codec, length) == SegmentRollCycle.INSTANCE.toIndex(segment, present)
                    && (present >= forced || codec.loaded(length[0]) == null)) {
                present++;
            }
        } catch (InternalError | AssertionError | IllegalStateException e) {
            // as in readable: the record being read is not there
        }
        return present;
    }

    private StorageException refusal(long records, String reason) {
        long lastId = SegmentRollCycle.INSTANCE.toIndex(segment, records - 1);
        return new StorageException("queue '" + queue + "': segment " + file + " cannot be read to its end: Chronicle's index "
                + "counts " + records + " records in it, and the last of them, id 0x" + Long.toHexString(lastId) + ", is not "
                + "in the file (cut short, or zeros where records were). " + reason + ". The queue is not opened, so that "
                + "nothing is appended behind the gap and its files stay as they are. Do not delete them: bin/sluice verify "
                + "and bin/sluice dump show what can still be read. Restore the queue's directory from a backup, or move it "
                + "out of the data directory to give the whole queue up");
    }

    private static SegmentCutBack.Forces forces(FileForcer forcer) {
        return new SegmentCutBack.Forces() {
            @Override
            public void forceFile(Path file) throws IOException {
                try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
                    forcer.force(channel, file);
                }
            }

            @Override
            public void forceDirectory(Path directory) throws IOException {
                try (FileChannel channel = FileChannel.open(directory, StandardOpenOption.READ)) {
                    forcer.forceDirectory(channel, directory);
                }
            }
        };
    }
}
