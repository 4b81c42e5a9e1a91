package io.sluice.storage.recovery;

import io.sluice.storage.CorruptRecordException;
import io.sluice.storage.QueueIncarnation;
import io.sluice.storage.StorageException;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.ack.AckLog;
import io.sluice.storage.ack.NewAckFiles;
import io.sluice.storage.ack.AckStateProbe;
import io.sluice.storage.ack.AckStateReader;
import io.sluice.storage.ack.SegmentAckBitmap;
import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.durability.ForcedMark;
import io.sluice.storage.files.ChecksummedFields;
import io.sluice.storage.durability.SegmentSyncer;
import io.sluice.storage.reclaim.RelocatedCopies;
import io.sluice.storage.reclaim.RelocationIntent;
import io.sluice.storage.segment.RecordCodec;
import io.sluice.storage.segment.SegmentCutBack;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.SegmentLog;
import io.sluice.storage.segment.SegmentRecords;
import io.sluice.storage.segment.SegmentRollCycle;
import io.sluice.storage.segment.SegmentTally;
import net.openhft.chronicle.queue.ExcerptTailer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.function.LongPredicate;
import java.util.function.IntConsumer;
import java.util.stream.IntStream;

/**
 * Opens one queue's files and returns what was recovered, without reading the backlog (the steps are
 * those of docs/storage.md, "Recovery"):
 * <ol>
 *   <li>finish interrupted deletes ({@code *.cq4.deleting});</li>
 *   <li>delete a newest segment whose creation was interrupted (its header incomplete), and the
 *       metadata file of a queue without segments whose creation was;</li>
 *   <li>open the segments; message counts per segment come from Chronicle's index, not a scan; the last segment's
 *       last counted record must be there, else its unforced tail is cut back or the queue refused
 *       ({@link LastSegmentEnd}); every segment before the last that a machine crash left without its end marker gets
 *       it (rule "a sealed segment ends in its marker");</li>
 *   <li>after an unclean stop (the store found no clean-shutdown mark), force every segment: the
 *       records a killed process appended since its last force are in the page cache, not on disk,
 *       and the reopened queue counts them as durable; otherwise, if a relocation pass was interrupted
 *       (its intent is there), force the segments its copies may be in;</li>
 *   <li>load the ack checkpoint, give a message relocated to a copy that is not on disk back to the slot it was
 *       relocated from (rule "a lost copy gives its message back", {@link io.sluice.storage.ack.LostCopies}), and replay
 *       the journal;</li>
 *   <li>verify the checksums of the last segment only (the one that can hold an unsynced tail after a
 *       machine crash), and of it only the records after the last force's mark (rule "the forced mark"),
 *       or from the relocation intent if a relocation pass was interrupted, and
 *       discard what is damaged there; resolve relocated copies whose relocation never reached the
 *       journal (rule R5: discard a duplicate, adopt a copy whose source is gone);</li>
 *   <li>resume appending in the last segment, or the next one if it is full, and never at an id the
 *       ack state has seen.</li>
 * </ol>
 * Not thread-safe: runs once, on the thread opening the queue, before anything else sees it.
 */
public final class QueueRecovery {
    private static final Logger LOG = LoggerFactory.getLogger(QueueRecovery.class);
    /** Bit of a Chronicle header word: the document or metadata after it is still being written. */
    private static final int CHRONICLE_NOT_COMPLETE = 0x8000_0000;

    /**
     * What was recovered: the open segments and ack state, the id of the last record (-1 if none),
     * and how many damaged records were discarded.
     */
    /** {@code verifiedRecords}: how many records step 5 read and checked (for tests and the log line). */
    public record Recovered(SegmentLog log, AckLog ackLog, long lastIndex, long corruptRecords, long verifiedRecords) {
        /** The last record recovery read back, with its segment's figures (rule "the forced mark"). */
        public ForcedMark.Written lastWritten() {
            if (lastIndex < 0) {
                return new ForcedMark.Written(lastIndex, -1, 0);
            }
            int segment = SegmentRollCycle.INSTANCE.toCycle(lastIndex);
            return new ForcedMark.Written(lastIndex, log.messageBytes(segment), log.stagedRecords(segment));
        }

        /** The open that followed the recovery failed: closes what recovery opened, so the refused queue holds no file. */
        public void closeAfterFailure(String queue) {
            log.close();
            try {
                ackLog.closeWithoutCheckpoint();
            } catch (RuntimeException e) {
                LOG.warn("Queue '{}': error while closing its ack state after a failed open.", queue, e);
            }
        }
    }

    private final String name;
    private final Path directory;
    private long verifiedRecords;
    private final Path segmentDirectory;
    private final StoreConfig config;
    private final FileForcer forcer;
    private final boolean afterUncleanStop;

    private QueueRecovery(String name, Path directory, StoreConfig config, FileForcer forcer, boolean afterUncleanStop) {
        this.forcer = forcer;
        this.afterUncleanStop = afterUncleanStop;
        this.name = name;
        this.directory = directory;
        this.segmentDirectory = directory.resolve("segments");
        this.config = config;
    }

    /**
     * Opens and recovers queue {@code name} in {@code directory}; {@code onSeal} and {@code onEntering} go to
     * the {@link SegmentLog}.
     * {@code createdAcks}, if not null, is the ack log of a new queue whose files were just created in
     * steps ({@link NewAckFiles#prepare}); the queue must have no segment then. {@code afterUncleanStop}:
     * the store was not closed cleanly the last time (a process crash), so the segments may hold records
     * that were never forced, and are forced before the queue is served.
     */
    public static Recovered open(String name, Path directory, StoreConfig config, IntConsumer onSeal, IntConsumer onEntering,
                                 AckLog createdAcks, FileForcer forcer, boolean afterUncleanStop) {
        return new QueueRecovery(name, directory, config, forcer, afterUncleanStop).run(onSeal, onEntering, createdAcks);
    }

    private Recovered run(IntConsumer onSeal, IntConsumer onEntering, AckLog createdAcks) {
        // Before any file of the queue is touched: a refusal leaves them as they are (the recovery of the ack state writes).
        QueueIncarnation.refuseIfDamaged(directory);
        // Then, before any segment file is touched: the checkpoint, for the segments it knows.
        AckLog ackLog;
        try {
            ackLog = createdAcks != null ? createdAcks : AckLog.open(directory.resolve("acks"), config.ackJournalBytes());
        } catch (IOException e) {
            throw new UncheckedIOException("ack state of queue '" + name + "' failed: " + e.getMessage(), e);
        }
        try {
            if (createdAcks == null) {
                refuseMissingSegmentsHoldingUnacknowledged(ackLog.state());
            }
            Files.createDirectories(segmentDirectory);
            finishInterruptedDeletes();
            SegmentCutBack.discardLeftover(segmentDirectory);
            discardUninitialisedLastSegment();
            refuseUnreadableSealedSegments();
            discardUninitialisedMetadata();
        } catch (IOException e) {
            closeAfterFailure(null, ackLog);
            throw new UncheckedIOException("cannot prepare the segment directory " + segmentDirectory, e);
        } catch (RuntimeException | Error e) {
            closeAfterFailure(null, ackLog);
            throw e;
        }
        int lastSegment;
        SegmentLog log;
        try {
            lastSegment = lastSegmentOnDisk();
            log = new SegmentLog(name, segmentDirectory, config.segmentBytes(), config.chronicleBlockBytes(), lastSegment, onSeal,
                    onEntering);
        } catch (RuntimeException | Error e) {
            closeAfterFailure(null, ackLog);
            throw e;
        }
        try {
            if (createdAcks != null && lastSegment >= 0) {
                throw new IllegalStateException("queue '" + name + "' has segment " + lastSegment + " on disk; it is not a new queue");
            }
            return recover(log, ackLog, lastSegment, createdAcks == null);
        } catch (IOException e) {
            closeAfterFailure(log, ackLog);
            throw new UncheckedIOException("ack state of queue '" + name + "' failed: " + e.getMessage(), e);
        } catch (RuntimeException | Error e) {
            closeAfterFailure(log, ackLog);
            throw e;
        } catch (Exception e) {
            // A checked exception Chronicle throws without declaring it (StreamCorruptedException for a segment whose first
            // header is not its own), which would pass every catch of the open up to the broker's start.
            closeAfterFailure(log, ackLog);
            String damaged = SegmentFiles.damagedHeader(segmentDirectory);
            throw new StorageException("queue '" + name + "': " + (damaged != null ? damaged
                    : "its segments in " + segmentDirectory + " cannot be read (" + e + ")"), e);
        }
    }

    /** A recovery that failed leaves no file open: a queue refused for want of descriptors must not hold any. */
    private void closeAfterFailure(SegmentLog log, AckLog ackLog) {
        if (log != null) {
            log.close();
        }
        try {
            ackLog.closeWithoutCheckpoint();
        } catch (RuntimeException e) {
            LOG.warn("Queue '{}': error while closing its ack state after a failed open.", name, e);
        }
    }

    private Recovered recover(SegmentLog log, AckLog ackLog, int lastSegment, boolean recoverAcks) throws IOException {
        if (lastSegment < 0) {
            if (recoverAcks) {
                ackLog.recover();
            }
            new RelocationIntent(directory).clear();
            skipReclaimedSegments(log, ackLog.state(), lastSegment);
            return new Recovered(log, ackLog, -1, 0, 0);
        }
        // Before the ack state hears the counts: what it knew of cut records is forgotten as after any lost tail.
        boolean cutBack = LastSegmentEnd.check(name, directory, log, lastSegment, forcer);
        log.countSegments(ackLog::segmentGrew, config.exactRollPoint());
        List<Integer> endMarked = log.writeMissingEndMarkers(lastSegment);
        if (!endMarked.isEmpty()) {
            LOG.warn("Queue '{}': sealed segments {} lacked the end marker a roll writes (a machine crash kept their records "
                    + "and the next segment's, not the marker), so readers stopped at their end; it is written now.", name,
                    endMarked.stream().map(SegmentFiles::fileName).toList());
            if (!afterUncleanStop) {
                forceSegments(endMarked); // the unclean stop's force below covers them
            }
        }
        RelocationIntent intent = new RelocationIntent(directory);
        long scanFrom = scanStart(log, intent, lastSegment);
        boolean relocationInterrupted = Files.exists(directory.resolve(RelocationIntent.FILE));
        if (afterUncleanStop) {
            forceSegments(Math.max(0, log.firstSegment()), lastSegment);
            LOG.info("Queue '{}': the store was not closed cleanly; forced its segments, which may hold records the stopped "
                    + "process had not forced.", name);
        } else if (relocationInterrupted) {
            forceSegments(SegmentRollCycle.INSTANCE.toCycle(scanFrom), lastSegment);
            LOG.info("Queue '{}': forced the segments from {} on, which may hold relocated copies not yet forced.", name,
                    SegmentFiles.fileName(SegmentRollCycle.INSTANCE.toCycle(scanFrom)));
        }
        AckLog.Recovery acks = ackLog.recover((lost, holds) -> earlierCopies(log, lost, holds));
        // With an interrupted relocation's intent there, its copies are checked from the intent's id whatever was
        // forced: a force may have covered copies whose RELOCATED records the journal never made durable (rule R5).
        ForcedMark.Mark mark = relocationInterrupted ? null : forcedMark(log, scanFrom, lastSegment);
        long corrupt = verify(log, ackLog, scanFrom, lastSegment, mark);
        intent.clear();
        long last = log.lastIndex();
        SegmentTally tail = log.tallies().get(lastSegment);
        if (tail != null && tail.bytes() >= config.segmentBytes()) {
            log.moveWriteSegmentTo(lastSegment + 1); // full: sealed before the restart, and forced then
        } else if (cutBack && !config.exactRollPoint()) {
            // Rule "cut ids are not given again" (docs/storage.md): a consumer may have had a cut record (the broker
            // serves what is written) and acknowledged it in a transaction whose commit record, replayed at every start
            // until the transaction is done, names its id; given again, the id would be a new, confirmed message, which
            // that replay would acknowledge. A cluster node keeps the ids every node gives (exactRollPoint): its log's
            // replay stores the cut entries again under them.
            log.moveWriteSegmentTo(lastSegment + 1);
            LOG.info("Queue '{}': appends continue at segment {}, so the ids of the records cut are not given again.", name,
                    SegmentFiles.fileName(lastSegment + 1));
        }
        skipReclaimedSegments(log, ackLog.state(), lastSegment);
        finishReclaimedDeletes(log, acks.reclaimedSegmentsStillOnDisk(), lastSegment);
        return new Recovered(log, ackLog, last, corrupt, verifiedRecords);
    }

    /**
     * Rule "a lost copy gives its message back" ({@link io.sluice.storage.ack.LostCopies}): for each message of
     * {@code lostCopyByOriginal} whose original is gone, the newest intact relocated copy of it below its lost copy in a
     * slot {@code holds} accepts. Reads every record: only after a machine crash took a copy of a message relocated twice.
     */
    private Map<Long, Long> earlierCopies(SegmentLog log, Map<Long, Long> lostCopyByOriginal, LongPredicate holds) {
        Map<Long, Long> found = new HashMap<>();
        RecordCodec codec = new RecordCodec();
        int[] length = new int[1];
        try (ExcerptTailer tailer = log.newTailer()) {
            for (long index = SegmentRecords.readNext(tailer, codec, length); index >= 0; index = SegmentRecords.readNext(tailer, codec, length)) {
                if (codec.loaded(length[0]) != null || !codec.relocated() || !holds.test(index)) {
                    continue;
                }
                Long lost = lostCopyByOriginal.get(codec.originalId());
                if (lost != null && index < lost) {
                    found.merge(codec.originalId(), index, Math::max);
                }
            }
        }
        LOG.info("Queue '{}': read its segments for earlier copies of {} messages whose copy is not on disk; found {}.", name,
                lostCopyByOriginal.size(), found.size());
        return found;
    }

    /**
     * Forces every segment from {@code fromSegment} to the last, then Chronicle's metadata file and the
     * segment directory, whose entries a segment never forced (a new one, or under {@code never}) may lack.
     * Two cases need it, both before the ack state is checkpointed and before the queue is served:
     * <ul>
     *   <li>After an unclean stop: a killed process leaves the records it appended since its last force in
     *       the page cache. Recovery reads them there and the reopened queue counts them as durable (its
     *       durable index starts at its last record), so a resend of one is answered DUPLICATE at once; a
     *       machine crash before the next force would lose what that answer confirmed.</li>
     *   <li>Rule "a source waits for its copies' forces" (docs/storage.md, "Reclaim") across a restart: with
     *       the relocation intent there, the copies written after its id may be in the page cache only (the
     *       process was killed, or closed under {@code never}, before their pass forced them), while the
     *       journal in the same page cache holds their RELOCATED records, and the next reclaim pass would
     *       delete their sources as fully acknowledged.</li>
     * </ul>
     */
    private void forceSegments(int fromSegment, int lastSegment) throws IOException {
        forceSegments(IntStream.rangeClosed(fromSegment, lastSegment).boxed().toList());
    }

    /** Forces {@code segments} (those on disk), the metadata file and the segment directory. */
    private void forceSegments(List<Integer> segments) throws IOException {
        for (int segment : segments) {
            Path file = SegmentFiles.file(segmentDirectory, segment);
            if (Files.exists(file)) {
                try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
                    forcer.force(channel, file);
                }
            }
        }
        Path metadata = segmentDirectory.resolve(SegmentSyncer.METADATA_FILE);
        if (Files.exists(metadata)) {
            try (FileChannel channel = FileChannel.open(metadata, StandardOpenOption.WRITE)) {
                forcer.force(channel, metadata);
            }
        }
        try (FileChannel channel = FileChannel.open(segmentDirectory, StandardOpenOption.READ)) {
            forcer.forceDirectory(channel, segmentDirectory);
        }
    }

    /**
     * Where verification starts: the last segment, which may hold an unsynced tail; or, if a relocation
     * pass was interrupted (rule R5), the first id its copies may have, which may be earlier.
     */
    private long scanStart(SegmentLog log, RelocationIntent intent, int lastSegment) {
        long lastSegmentStart = SegmentRollCycle.INSTANCE.toIndex(lastSegment, 0);
        try {
            OptionalLong after = intent.read();
            if (after.isEmpty()) {
                return lastSegmentStart;
            }
            LOG.info("Queue '{}': a relocation was under way when the store stopped; checking the copies written after 0x{}.",
                    name, Long.toHexString(after.getAsLong()));
            return Math.min(after.getAsLong() + 1, lastSegmentStart);
        } catch (IOException | StorageException e) {
            LOG.warn("Queue '{}': the relocation intent cannot be read ({}); checking every segment.", name, e.getMessage());
            return SegmentRollCycle.INSTANCE.toIndex(Math.max(0, log.firstSegment()), 0);
        }
    }

    /**
     * Segments the ack state records as reclaimed whose file is still there: the process stopped between journaling the
     * reclaim and renaming the file, or a machine crash kept the journal's record and not the rename. Left there, every
     * later reclaim pass would fail at them (the ack state no longer knows them), so the deletes are finished, once the
     * last segment is checked and the write segment placed.
     *
     * <p>Rule "a reclaimed last segment is not appended to" (docs/storage.md, "Recovery"): the last segment on disk may be
     * one of them, every message of it acknowledged, when the journal's record of its reclaim reached the disk and the
     * segments' newer state did not (under {@code never}: the next segment's entry, this one's rename, its end-of-file
     * marker). Appends going on in it would each be refused by the ack state, for good; they go on in the next
     * segment instead.
     */
    private void finishReclaimedDeletes(SegmentLog log, int[] segments, int lastSegment) throws IOException {
        if (segments.length == 0) {
            return;
        }
        for (int segment : segments) {
            if (segment == lastSegment) {
                if (log.writeSegment() <= lastSegment) {
                    log.moveWriteSegmentTo(lastSegment + 1);
                }
                LOG.warn("Queue '{}': its last segment {} is one the ack state records as reclaimed (a machine crash kept that "
                        + "record and not the segments' newer state); it is deleted, and appends continue at segment {}.", name,
                        SegmentFiles.fileName(segment), log.writeSegment());
            } else {
                LOG.info("Queue '{}': finishing the interrupted reclaim of segment {}.", name, SegmentFiles.fileName(segment));
            }
            if (log.removeSegment(segment) != null) {
                Files.deleteIfExists(log.deletingFile(segment));
            }
        }
        log.refreshListing();
    }

    /**
     * Rule "ids are never reused": if the ack state knows segments newer than the newest file (they
     * were written, fully acknowledged and deleted before the crash), appends continue after them.
     */
    private void skipReclaimedSegments(SegmentLog log, AckStateReader acks, int lastSegmentOnDisk) {
        int highestKnown = acks.highestKnownSegment();
        if (highestKnown > lastSegmentOnDisk && highestKnown >= log.writeSegment()) {
            LOG.info("Queue '{}': segments up to {} were reclaimed before the restart; appends continue at segment {}.",
                    name, highestKnown, highestKnown + 1);
            log.moveWriteSegmentTo(highestKnown + 1);
        }
    }

    /**
     * Checks every record from {@code fromId} to the end: a damaged record is discarded (acknowledged,
     * counted), and an unacknowledged relocated copy the ack state does not name as its message's
     * holder is resolved by rule R5 ({@link RelocatedCopies}). Returns how many records were damaged.
     */
    /**
     * Rule "the forced mark" (docs/storage.md, "Recovery"): the mark of the last force, if it was made for this very
     * last segment file (its inode: not a copy of the queue's files) and names a record of it that is there, and
     * verification would otherwise start at that segment's first record; else null.
     */
    private ForcedMark.Mark forcedMark(SegmentLog log, long scanFrom, int lastSegment) {
        if (scanFrom != SegmentRollCycle.INSTANCE.toIndex(lastSegment, 0)) {
            return null;
        }
        ForcedMark.Mark mark = ForcedMark.readFor(directory, lastSegment, SegmentFiles.file(segmentDirectory, lastSegment));
        if (mark == null) {
            logAMarkThatDoesNotCheckOut();
        }
        return mark == null || mark.index() > log.lastIndex() ? null : mark;
    }

    /** A mark not believed for want of a whole file says why: empty or zeros after a machine crash, else damaged. */
    private void logAMarkThatDoesNotCheckOut() {
        Path file = directory.resolve(ForcedMark.FILE);
        try {
            ChecksummedFields.Problem problem = ForcedMark.problem(directory);
            if (problem != null && problem.blank()) {
                LOG.info("Queue '{}': {} {} (a machine crash kept its name, not its data); its last segment is checked whole.",
                        name, file, problem.description());
            } else if (problem != null) {
                LOG.warn("Queue '{}': {} does not check out ({}) and is ignored; its last segment is checked whole.", name, file,
                        problem.description());
            }
        } catch (IOException e) {
            LOG.warn("Queue '{}': {} cannot be read ({}) and is ignored; its last segment is checked whole.", name, file,
                    e.toString());
        }
    }

    /**
     * Checks the records from {@code fromId} on, or, with a forced mark, only those after it: a record a successful
     * force made durable was read back whole after any crash, so only the records after the last force can be torn.
     */
    private long verify(SegmentLog log, AckLog ackLog, long fromId, int lastSegment, ForcedMark.Mark mark) throws IOException {
        AckStateReader acks = ackLog.state();
        long started = System.nanoTime();
        long checked = 0;
        long bad = 0;
        RecordCodec codec = new RecordCodec();
        int[] length = new int[1];
        // The last segment's figures for the backlog's byte count, as BacklogBytes.messageBytesFrom would read them
        // (every record's bytes, damaged or not), when this pass reads all of that segment, or all after the mark.
        long lastSegmentFirst = SegmentRollCycle.INSTANCE.toIndex(lastSegment, 0);
        long lastSegmentRecords = 0;
        long lastSegmentMessageBytes = 0;
        long lastSegmentStaged = 0;
        boolean figuresKnown = fromId <= lastSegmentFirst;
        if (mark != null) {
            fromId = mark.index() + 1;
            lastSegmentRecords = SegmentRollCycle.INSTANCE.toSequenceNumber(mark.index()) + 1;
            lastSegmentMessageBytes = mark.segmentMessageBytes();
            lastSegmentStaged = mark.segmentStaged();
            figuresKnown = mark.segmentMessageBytes() >= 0;
        }
        try (ExcerptTailer tailer = log.newTailer()) {
            // Past the last record (a mark naming it) a tailer positioned there would fall back to the start.
            boolean nothingToCheck = fromId > log.lastIndex();
            if (!nothingToCheck) {
                log.position(tailer, fromId);
            }
            for (long index = nothingToCheck ? -1 : SegmentRecords.readNext(tailer, codec, length); index >= 0;
                 index = SegmentRecords.readNext(tailer, codec, length)) {
                if (index < fromId) {
                    continue;
                }
                if (index >= lastSegmentFirst) {
                    lastSegmentRecords++;
                    lastSegmentMessageBytes += Math.max(0, length[0] - RecordCodec.HEADER_BYTES);
                    if (length[0] >= RecordCodec.HEADER_BYTES && codec.transactional()) {
                        lastSegmentStaged++;
                    }
                }
                String problem = codec.loaded(length[0]);
                checked++;
                if (acks.isSlotAcked(index)) {
                    continue;
                }
                if (problem != null) {
                    bad++;
                    int segment = SegmentRollCycle.INSTANCE.toCycle(index);
                    CorruptRecordException e = new CorruptRecordException(SegmentFiles.file(segmentDirectory, segment), index, -1, problem);
                    LOG.error("Queue '{}': {}. The record is skipped and will never be delivered.", name, e.getMessage());
                    ackLog.ack(index);
                } else if (codec.relocated()) {
                    RelocatedCopies.resolve(name, ackLog, index, codec.originalId());
                }
            }
        }
        if (figuresKnown) {
            log.learnTally(lastSegment, lastSegmentRecords, lastSegmentMessageBytes, lastSegmentStaged);
        }
        verifiedRecords = checked;
        LOG.info("Queue '{}': verified the {} records from 0x{} to the end of segment {} in {} ms; {} damaged.",
                name, checked, Long.toHexString(fromId), SegmentFiles.fileName(lastSegment),
                (System.nanoTime() - started) / 1_000_000, bad);
        return bad;
    }

    private int lastSegmentOnDisk() {
        int last = -1;
        try (var files = Files.list(segmentDirectory)) {
            for (Path p : (Iterable<Path>) files::iterator) {
                last = Math.max(last, SegmentFiles.segmentOf(p.getFileName().toString()));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + segmentDirectory, e);
        }
        return last;
    }

    private void finishInterruptedDeletes() throws IOException {
        try (var files = Files.list(segmentDirectory)) {
            for (Path p : (Iterable<Path>) files::iterator) {
                if (p.getFileName().toString().endsWith(SegmentFiles.DELETING_SUFFIX)) {
                    LOG.info("Queue '{}': finishing the interrupted delete of {}.", name, p.getFileName());
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    /**
     * A process killed while Chronicle was creating a segment (at a roll) leaves a file whose first
     * header, the segment's own metadata, is still marked not-complete (or not written at all).
     * Chronicle waits its full timeout for that header every time it opens the file, which made
     * recovery take a minute or more; the file cannot hold a record (records follow that header), so
     * it is deleted. Only the newest file can be in that state: one process writes, and it rolls
     * only after the file before is complete.
     */
    private void discardUninitialisedLastSegment() throws IOException {
        int last = lastSegmentOnDisk();
        if (last < 0) {
            return;
        }
        Path file = SegmentFiles.file(segmentDirectory, last);
        if (headerIncomplete(file)) {
            refuseAnEmptiedSegmentHoldingUnacknowledged(file, last);
            LOG.warn("Queue '{}': segment {} was being created when the process stopped (its header is incomplete, so it holds "
                    + "no message); deleting it.", name, file.getFileName());
            Files.delete(file);
        }
    }

    /**
     * A segment before the last whose first header Chronicle does not accept cannot be read, and its records cannot be
     * told apart without that header and its index: the queue is refused, naming the file, which is left as it is. Given
     * one whose header was never completed (zeros, or its top bit set), Chronicle waited out its timeout at every look at
     * it, the open took more than a minute, and Chronicle then took it for a segment that is not there: the ack state
     * forgot its unacknowledged messages with a warning. Only the newest segment can be caught in its creation
     * ({@link #discardUninitialisedLastSegment}). One open and a 4-byte read per sealed segment.
     */
    private void refuseUnreadableSealedSegments() throws IOException {
        int last = lastSegmentOnDisk();
        try (var files = Files.list(segmentDirectory)) {
            for (Path p : (Iterable<Path>) files::iterator) {
                int segment = SegmentFiles.segmentOf(p.getFileName().toString());
                if (segment < 0 || segment >= last) {
                    continue;
                }
                SegmentFiles.FirstHeader header = SegmentFiles.FirstHeader.read(p);
                if (!header.accepted()) {
                    throw new StorageException("queue '" + name + "': segment file " + p + " " + header.describe()
                            + (header.neverCompleted() ? ", though later segments follow" : "") + ": its records cannot be"
                            + " read. The queue is not opened and its files stay as they are; restore the queue's directory"
                            + " from a backup, or move it out of the data directory to give the whole queue up");
                }
            }
        }
    }

    /**
     * A segment the ack checkpoint knows whose file is not there was reclaimed (every message of it acknowledged or
     * relocated, and the journal says so on disk before the rename: R2, R4), or was deleted by someone else; recovery
     * would forget it with a warning, and its unacknowledged messages, confirmed, with it. The queue is refused when the
     * ack state, its journal replayed on a private copy, counts unacknowledged messages in such a segment; its files
     * stay as they are. Reads the ack files only when a segment the checkpoint counts messages in has no file.
     */
    private void refuseMissingSegmentsHoldingUnacknowledged(AckStateReader acks) throws IOException {
        Map<Integer, Long> unacknowledged = AckStateProbe.unacknowledgedInMissing(directory.resolve("acks"), acks,
                segment -> Files.exists(SegmentFiles.file(segmentDirectory, segment)), this::segmentRecordBounds);
        StringBuilder gone = new StringBuilder();
        long total = 0;
        for (Map.Entry<Integer, Long> segment : unacknowledged.entrySet()) {
            gone.append(gone.isEmpty() ? "" : ", ").append(SegmentFiles.file(segmentDirectory, segment.getKey()))
                    .append(" (").append(segment.getValue()).append(" unacknowledged messages)");
            total += segment.getValue();
        }
        if (total > 0) {
            throw new StorageException("queue '" + name + "': segment file " + gone + " is gone, and the ack state counts "
                    + "those messages as stored and not acknowledged: " + total + " messages are lost unless the file comes "
                    + "back. The queue is not opened and its files stay as they are; put the segment file back (from a "
                    + "backup), or move the queue's directory out of the data directory to give the whole queue up");
        }
    }

    /**
     * Each segment file with a bound on its records (each at least a header and Chronicle's four bytes), since Chronicle
     * is not open yet to count them.
     */
    private Map<Integer, Long> segmentRecordBounds() throws IOException {
        Map<Integer, Long> bounds = new HashMap<>();
        if (Files.isDirectory(segmentDirectory)) {
            try (var files = Files.list(segmentDirectory)) {
                for (Path p : (Iterable<Path>) files::iterator) {
                    int segment = SegmentFiles.segmentOf(p.getFileName().toString());
                    if (segment >= 0) {
                        bounds.put(segment, Math.min(SegmentAckBitmap.MAX_MESSAGE_COUNT,
                                Files.size(p) / (RecordCodec.HEADER_BYTES + 4) + 1));
                    }
                }
            }
        }
        return bounds;
    }

    /**
     * An empty or zero-filled last segment is what a process killed while Chronicle created it leaves, and holds no
     * message then; but one the ack state counts unacknowledged messages in was emptied after they were written (a file
     * system that lost its data, a file overwritten), and deleting it lost them, and their confirms, with a warning. The
     * queue is refused instead, as for a segment cut short (rule "what the index counts is there"), and its files stay
     * as they are; a segment all of whose messages are acknowledged is deleted as before.
     */
    private void refuseAnEmptiedSegmentHoldingUnacknowledged(Path file, int segment) throws IOException {
        long unacknowledged = AckStateProbe.unacknowledgedIn(directory.resolve("acks"), segment);
        if (unacknowledged > 0) {
            throw new StorageException("queue '" + name + "': segment " + file + " is empty or holds only zeros, and the ack "
                    + "state counts " + unacknowledged + " unacknowledged messages in it: they were stored and are gone. The "
                    + "queue is not opened and its files stay as they are; restore the queue's directory from a backup, or "
                    + "move it out of the data directory to give the whole queue up");
        }
    }

    /**
     * A process killed (or a machine crashed) while Chronicle was creating a new queue's metadata file
     * leaves it with its header incomplete, and Chronicle then refuses to open the queue ("Expected
     * SCQMeta"). A queue with no segment keeps nothing in that file (a write lock, the last cycle), so it
     * is deleted and Chronicle makes it again.
     */
    private void discardUninitialisedMetadata() throws IOException {
        Path file = segmentDirectory.resolve(SegmentSyncer.METADATA_FILE);
        if (lastSegmentOnDisk() < 0 && Files.exists(file) && headerIncomplete(file)) {
            LOG.warn("Queue '{}': its metadata file was being created when the process stopped (its header is incomplete); "
                    + "the queue has no segment, so the file is made again.", name);
            Files.delete(file);
        }
    }

    /** True if the first header of Chronicle file {@code file} is missing, zero or still marked not complete. */
    private static boolean headerIncomplete(Path file) throws IOException {
        ByteBuffer header = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            channel.read(header, 0);
        }
        int word = header.hasRemaining() ? 0 : header.getInt(0);
        return word == 0 || (word & CHRONICLE_NOT_COMPLETE) != 0;
    }
}
