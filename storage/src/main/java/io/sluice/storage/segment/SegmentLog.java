package io.sluice.storage.segment;

import io.sluice.storage.StorageException;
import io.sluice.storage.StorageFilesExhaustedException;
import io.sluice.storage.files.FileDescriptors;
import io.sluice.storage.memory.ResidentPages;
import net.openhft.chronicle.bytes.Byteable;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.bytes.MappedBytesStore;
import net.openhft.chronicle.core.io.Closeable;
import net.openhft.chronicle.core.values.LongValue;
import net.openhft.chronicle.queue.ExcerptAppender;
import net.openhft.chronicle.queue.ExcerptTailer;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import net.openhft.chronicle.wire.DocumentContext;
import net.openhft.chronicle.wire.Wire;
import net.openhft.chronicle.wire.WriteAfterEOFException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.NavigableSet;
import java.util.TreeMap;
import java.util.function.IntConsumer;

/**
 * One queue's segments: the only class that touches Chronicle Queue. Appends records (rolling to a
 * new segment once the current one holds {@code segmentBytes}), reads them by id or in order, keeps a
 * tally (records and bytes) per segment on disk, and takes a reclaimed segment out of Chronicle's
 * sight.
 *
 * <p>Ids are Chronicle indexes, {@code segment << 32 | sequence} ({@link SegmentRollCycle}): they
 * increase with every append and never repeat, but are not contiguous across segments.
 *
 * <p>Not thread-safe: the owning {@code QueueStore}'s lock guards every call except
 * {@link #newTailer()}, which Chronicle allows from any thread (the read-ahead thread uses it).
 */
public final class SegmentLog implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SegmentLog.class);

    /** Mapping chunk of a segment file: Chronicle maps this much (plus a quarter) at a time. */
    /** How long a queue refused for want of descriptors refuses appends before it tries again. */
    private static final long REFUSAL_BACKOFF_NANOS = 1_000_000_000L;

    private final String queueName;
    private final Path segmentDirectory;
    private final long segmentBytes;
    /** Chronicle's block, {@link io.sluice.storage.StoreConfig#chronicleBlockBytes()}. */
    private final long blockBytes;
    private final SegmentClock segmentClock;
    /**
     * Chronicle, once opened: at once for a queue with segments on disk, else at its first use (rule
     * "Chronicle opens at first use", docs/storage.md), usually the first append. Written once, under
     * this object's monitor.
     */
    private volatile SingleChronicleQueue chronicle;
    /** Closed: Chronicle is not opened any more; under this object's monitor. */
    private boolean closed;
    /**
     * A value of Chronicle's table in {@code metadata.cq4t}, held for the life of the log: while it is
     * held, its mapping of the metadata file stays mapped, so that {@link #dropWrittenPages()} can drop
     * pages of it.
     */
    private LongValue metadataValue;
    /** Replaced after a failed append ({@link #replaceAppender()}); guarded by the owner's lock. */
    private ExcerptAppender appender;
    private final RecordCodec randomReadCodec = new RecordCodec();
    private final IntConsumer onSeal;
    private final IntConsumer onEntering;
    private ExcerptTailer randomTailer;
    /**
     * Rule "a queue out of descriptors backs off": after an append was refused because its segment file,
     * or a channel its forces need ({@code onEntering}), could not be opened, appends are refused with
     * the same error without trying again until this time ({@code System.nanoTime()}), so that a queue
     * that cannot have a file costs its event loop one attempt (and Chronicle one warning with a stack
     * trace) a second, not one per message.
     */
    private long refuseUntilNanos;
    private StorageFilesExhaustedException lastRefusal;
    /** Where the written pages were last dropped from the mappings; under the owner's lock. */
    private final WrittenPages writtenPages = new WrittenPages();
    /** Record bytes and message counts per segment on disk, oldest first. */
    private final TreeMap<Integer, SegmentTally> tallies = new TreeMap<>();
    /** The tally of the segment the last append went to; guarded by the owner's lock. */
    private SegmentTally lastAppendTally;
    /** The backlog's byte count over these segments and their tallies. */
    private final BacklogBytes backlogBytes = new BacklogBytes(this);

    /**
     * Opens Chronicle on {@code segmentDirectory} if a segment is there ({@code writeSegment} at least 0),
     * else at the log's first use that needs it, usually the first append (rule "Chronicle opens at first
     * use", docs/storage.md); appends go to {@code writeSegment}. {@code onSeal}
     * is told (under the owner's lock) each time a segment is sealed by a roll. {@code onEntering} is
     * told before every append writes its record, with the segment it goes to, once Chronicle has that
     * segment's file open: what it throws refuses the append, and nothing is written (rule "descriptors
     * are taken by the append", docs/storage.md). Call only with the store's {@code store.lock} held: a
     * Chronicle lock left held by a killed writer is released when Chronicle opens ({@link StaleWriteLocks}).
     */
    public SegmentLog(String queueName, Path segmentDirectory, long segmentBytes, long blockBytes, int writeSegment,
                      IntConsumer onSeal, IntConsumer onEntering) {
        this.queueName = queueName;
        this.segmentDirectory = segmentDirectory;
        this.segmentBytes = segmentBytes;
        this.blockBytes = blockBytes;
        this.onSeal = onSeal;
        this.onEntering = onEntering;
        this.segmentClock = new SegmentClock(Math.max(writeSegment, 0));
        if (writeSegment >= 0) {
            open();
        }
    }

    /** Chronicle, opened now if it was not yet; any thread (the read-ahead's {@link #newTailer()}). */
    private SingleChronicleQueue chronicle() {
        SingleChronicleQueue opened = chronicle;
        if (opened == null) {
            synchronized (this) {
                if (closed) {
                    throw new StorageException("the segments of queue '" + queueName + "' are closed");
                }
                if (chronicle == null) {
                    open();
                }
                opened = chronicle;
            }
        }
        return opened;
    }

    /**
     * Opens Chronicle on the segment directory, first releasing a Chronicle lock a killed writer left held
     * ({@link StaleWriteLocks}: safe, since the store's {@code store.lock} is held and this log opens the
     * directory once).
     *
     * @throws io.sluice.storage.StorageFilesExhaustedException if a file cannot be opened for want of descriptors
     */
    private synchronized void open() {
        SingleChronicleQueue opened = null;
        try {
            String damaged = SegmentFiles.damagedMetadata(segmentDirectory); // before Chronicle, or a lock, reads it
            if (damaged != null) {
                throw new StorageException("queue '" + queueName + "': " + damaged);
            }
            StaleWriteLocks.release(queueName, segmentDirectory);
            opened = SingleChronicleQueueBuilder.single(segmentDirectory.toFile())
                    .rollCycle(SegmentRollCycle.INSTANCE)
                    .timeProvider(segmentClock)
                    .blockSize(blockBytes())
                    .checkInterrupts(false)
                    .build();
            if (opened.metaStore().readOnly()) {
                // Chronicle falls back to a read-only metadata file when it cannot open it for writing, and the
                // queue could then never append. A file the process may write was refused for want of
                // descriptors (probing for a free one would not tell: the failed open may have freed the one
                // it took); one it may not write is a permissions problem, reported as such.
                Path metadata = segmentDirectory.resolve(SingleChronicleQueue.QUEUE_METADATA_FILE);
                boolean writable = (Files.notExists(metadata) || Files.isWritable(metadata)) && Files.isWritable(segmentDirectory);
                IllegalStateException readOnly = new IllegalStateException(writable
                        ? "Chronicle could open " + metadata + " only read-only"
                        : metadata + " or its directory is not writable by this process");
                if (writable) {
                    throw FileDescriptors.exhaustedError("queue '" + queueName + "' cannot open its segments in " + segmentDirectory,
                            readOnly);
                }
                throw readOnly;
            }
            this.appender = opened.createAppender();
            this.metadataValue = opened.metaStore().acquireValueFor(StaleWriteLocks.WRITE_LOCK_KEY);
            appender.singleThreadedCheckDisabled(true);
        } catch (RuntimeException e) {
            if (opened != null) {
                opened.close();
            }
            if (FileDescriptors.exhausted(e) || descriptorsExhaustedNow()) {
                throw FileDescriptors.exhaustedError("queue '" + queueName + "' cannot open its segments in " + segmentDirectory, e);
            }
            throw e;
        } catch (VirtualMachineError e) {
            if (opened != null) {
                opened.close();
            }
            throw e;
        } catch (Throwable e) {
            // Chronicle throws checked exceptions it does not declare (StreamCorruptedException for a segment whose first
            // header is not its own); let through, they would pass every catch of the open up to the broker's start.
            if (opened != null) {
                opened.close();
            }
            throw openFailure(e);
        }
        this.chronicle = opened;
    }

    /** A failure of Chronicle's open that is neither a {@link RuntimeException} nor the JVM's, named by queue and file. */
    private StorageException openFailure(Throwable e) {
        String damaged = SegmentFiles.damagedHeader(segmentDirectory);
        return new StorageException("queue '" + queueName + "': " + (damaged != null ? damaged
                : "Chronicle cannot open the segments in " + segmentDirectory + " (" + e + ")"), e);
    }

    private long blockBytes() {
        return blockBytes;
    }

    /**
     * Rule "an unforced tail is cut back" (docs/storage.md, "Recovery"): replaces the file of {@code segment}, the last,
     * by one holding only its first {@code keep} records ({@link SegmentCutBack}). The replacement is forced before it
     * takes the segment's name and the directory after, so a crash leaves either the old file, to be cut again, or the
     * new one, on disk. For recovery, before {@link #countSegments}: Chronicle is closed and opened again around the rename.
     */
    public void cutBack(int segment, long keep, SegmentCutBack.Forces forces) throws IOException {
        if (!tallies.isEmpty()) {
            throw new IllegalStateException("segment " + segment + " of queue '" + queueName + "' is cut back after it was counted");
        }
        Path replacement = SegmentCutBack.writeReplacement(this, segment, keep, blockBytes());
        forces.forceFile(replacement);
        closeChronicle();
        chronicle = null;
        Files.move(replacement, SegmentFiles.file(segmentDirectory, segment), StandardCopyOption.ATOMIC_MOVE);
        forces.forceDirectory(segmentDirectory);
        SegmentCutBack.discardLeftover(segmentDirectory);
        open();
    }

    /**
     * Chronicle hides why some opens failed (it falls back to read-only, or wraps the error away): true if
     * the process cannot open a file right now for want of descriptors.
     */
    private boolean descriptorsExhaustedNow() {
        try {
            FileChannel.open(segmentDirectory, StandardOpenOption.READ).close();
            return false;
        } catch (IOException e) {
            return FileDescriptors.exhausted(e);
        }
    }

    public Path segmentDirectory() {
        return segmentDirectory;
    }

    /** The segment appends go to. */
    public int writeSegment() {
        return segmentClock.segment();
    }

    /** Seals the write segment: the next append starts a new one. */
    public void sealWriteSegment() {
        SegmentTally current = tallies.get(segmentClock.segment());
        if (current != null) {
            current.sealedAtNanos = System.nanoTime();
            keepTally(segmentClock.segment(), current);
        }
        onSeal.accept(segmentClock.segment());
        segmentClock.advance();
    }

    /**
     * Writes {@code tally} beside its sealed segment if it covers every record (rule "a sealed segment's tally"); else
     * deletes a tally file the segment may have from before (a machine crash took its tail and appends refilled it),
     * which could otherwise match the segment's new record count. On the appending thread, under the queue's lock,
     * once per segment, beside the roll's own file creation.
     */
    void keepTally(int segment, SegmentTally tally) {
        if (tally.messageBytes >= 0 && tally.messages > 0) {
            SegmentTallyFile.write(segmentDirectory, segment,
                    new SegmentTallyFile.Tally(tally.messages, tally.messageBytes, tally.stagedRecords));
        } else {
            SegmentTallyFile.delete(segmentDirectory, segment);
        }
    }

    /**
     * Rule "ids are never reused": appends continue at {@code segment}, past segments the ack state
     * knows of that are no longer on disk.
     */
    public void moveWriteSegmentTo(int segment) {
        segmentClock.moveTo(segment);
    }

    // ---------------------------------------------------------------- append

    /**
     * Appends the encoded record, first sealing the write segment if the record would take it past
     * {@code segmentBytes}, and returns the record's id.
     *
     * @throws MappedFileFaultException if the store into the mapping faulted (SIGBUS); nothing was written
     * @throws io.sluice.storage.StorageFilesExhaustedException if the segment file, or a file {@code onEntering}
     *         opens, cannot be opened for want of file descriptors; nothing was written
     * @throws StorageException if Chronicle fails otherwise, or {@code onEntering} refused; nothing was written then
     */
    public long append(RecordCodec codec) {
        if (lastRefusal != null) {
            if (System.nanoTime() - refuseUntilNanos < 0) {
                throw new StorageFilesExhaustedException(lastRefusal.getMessage(), lastRefusal);
            }
            lastRefusal = null;
        }
        try {
            chronicle();
        } catch (StorageFilesExhaustedException e) {
            throw backOff(e); // the first append of a queue whose Chronicle was not yet open: nothing written
        }
        int length = codec.length();
        SegmentTally current = tallies.get(segmentClock.segment());
        if (current != null && current.messages > 0 && current.bytes + length > segmentBytes) {
            sealWriteSegment();
        }
        try {
            writeOrMovePastSeal(codec, length);
        } catch (EntryRefused refused) {
            if (refused.refusal() instanceof StorageFilesExhaustedException exhausted) {
                backOff(exhausted); // every later append would try the same opens, each one refused
            }
            throw refused.refusal();
        } catch (InternalError e) {
            // Raised by the JVM at the next safepoint after the faulting store, which may be in Chronicle's
            // header write, the record or the close: all of the append is covered.
            throw new MappedFileFaultException("an append to queue '" + queueName + "'",
                    SegmentFiles.file(segmentDirectory, segmentClock.segment()), e);
        } catch (Exception e) {
            // Chronicle throws I/O exceptions it does not declare, such as FileNotFoundException when it cannot
            // create or open the segment file; nothing was written then.
            Path file = SegmentFiles.file(segmentDirectory, segmentClock.segment());
            replaceAppender();
            if (FileDescriptors.exhausted(e)) {
                throw backOff(FileDescriptors.exhaustedError("queue '" + queueName + "' cannot open its segment file " + file, e));
            }
            throw e instanceof StorageException se ? se
                    : new StorageException("append to queue '" + queueName + "' failed; nothing was written", e);
        }
        long index = appender.lastIndexAppended();
        int segment = SegmentRollCycle.INSTANCE.toCycle(index);
        SegmentTally tally = tallies.computeIfAbsent(segment, SegmentTally::begun);
        lastAppendTally = tally;
        tally.messages = SegmentRollCycle.INSTANCE.toSequenceNumber(index) + 1;
        tally.bytes += length + 4;
        if (tally.messageBytes >= 0) {
            tally.messageBytes += length - RecordCodec.HEADER_BYTES;
            if (codec.transactional()) {
                tally.stagedRecords++;
            }
        }
        return index;
    }

    /** What {@code onEntering} threw, carried past the handling of Chronicle's own failures in {@link #append}. */
    private static final class EntryRefused extends RuntimeException {
        private static final long serialVersionUID = 1L;

        EntryRefused(RuntimeException refusal) {
            super(null, refusal, false, false);
        }

        RuntimeException refusal() {
            return (RuntimeException) getCause();
        }
    }

    /**
     * After an append that failed inside Chronicle: a Chronicle appender that could not open its
     * segment file is left without a store and fails every later append (its document has no wire),
     * and the write lock it took is left held; so the lock is released and the appender replaced by a
     * new one, which opens the file again on its first append.
     */
    private void replaceAppender() {
        try {
            appender.close();
        } catch (RuntimeException e) {
            // the broken appender's state is what is being discarded
        }
        StaleWriteLocks.releaseAfterFailedAppend(queueName, chronicle);
        appender = chronicle.createAppender();
        appender.singleThreadedCheckDisabled(true);
    }

    /** Rule "a queue out of descriptors backs off" (see {@link #refuseUntilNanos}); returns {@code refusal}. */
    private StorageFilesExhaustedException backOff(StorageFilesExhaustedException refusal) {
        lastRefusal = refusal;
        refuseUntilNanos = System.nanoTime() + REFUSAL_BACKOFF_NANOS;
        return refusal;
    }

    /**
     * Rule "a sealed segment stays sealed": a writer killed in the middle of a roll had Chronicle write the end-of-file
     * marker into the segment it left and died before the next one's first record, so an opened store finds that
     * segment last, with no ack state past it, and appends there; Chronicle refuses every write after the marker. The
     * append goes on in the next segment, as the killed writer's would have (its first append after the marker is the
     * one that rolled, so ids stay those of a writer that was never killed).
     */
    private void writeOrMovePastSeal(RecordCodec codec, int length) {
        try {
            write(codec, length);
        } catch (WriteAfterEOFException sealed) {
            int segment = segmentClock.segment();
            LOG.warn("Queue '{}': segment {} was sealed by a writer stopped in the middle of a roll; appends go on in the "
                    + "next segment.", queueName, SegmentFiles.file(segmentDirectory, segment).getFileName());
            replaceAppender();
            sealWriteSegment();
            write(codec, length);
        }
    }

    private void write(RecordCodec codec, int length) {
        DocumentContext dc = appender.writingDocument();
        try {
            try {
                onEntering.accept(segmentClock.segment());
            } catch (RuntimeException e) {
                dc.rollbackOnClose(); // the document Chronicle began is never completed: no record at all
                throw new EntryRefused(e);
            }
            dc.wire().bytes().write(codec.array(), 0, length);
        } catch (EntryRefused e) {
            throw e;
        } catch (RuntimeException e) {
            dc.rollbackOnClose();
            throw new StorageException("append to queue '" + queueName + "' failed; nothing was written", e);
        } catch (InternalError e) {
            dc.rollbackOnClose();
            throw e;
        } finally {
            dc.close();
        }
    }

    /**
     * Drops from this process's memory the pages of the write segment's current mapping chunk that lie
     * wholly behind the append position ({@link ResidentPages}, rule "drop only what nobody writes"),
     * and the pages of Chronicle's metadata file but its first. Chronicle keeps a chunk ({@code blockSize}
     * plus a quarter) mapped until the appender moves past it, so without this every page a slow queue
     * has written stays in the broker's RSS. Under the owner's lock: no append can move the appender to
     * another chunk, and so unmap this one, meanwhile.
     *
     * <p>Rule "the first page stays mapped": the first page of {@code metadata.cq4t} holds Chronicle's
     * table (the write lock, the last cycle), read on every append, and the first page of a segment file
     * its header, read on every append and every read at the tail. Dropped, the next such read faults,
     * and the kernel's fault-around maps every cached page of the window around it back in: for
     * the metadata file, zeros that read-ahead brought into the cache (Chronicle uses its first page
     * only), so with its first page left mapped it keeps one page resident instead of a window. A
     * segment's first window also holds Chronicle's index of indexes and its first index array, which
     * the appends that write an index entry (one in {@link SegmentRollCycle#defaultIndexSpacing()}) read,
     * so the segment's window still comes back with those.
     * Returns true if it dropped pages.
     */
    public boolean dropWrittenPages() {
        if (!ResidentPages.enabled() || chronicle == null) {
            return false;
        }
        return writtenPages.dropBehindAppender(mappedAppendBytes(), ((Byteable) metadataValue).bytesStore());
    }

    /**
     * Before a force: the whole pages written since the last call that lie behind the append position, to be dropped
     * from this process's mappings in one {@code madvise} (rule "a force finds no written page mapped", docs/storage.md,
     * "Written pages and the cost of a force"), or null if there are none. Writeback write-protects every page it
     * cleans that a process has mapped writable, and on a machine whose process runs threads on more than one CPU each
     * of those is an inter-processor interrupt to flush the other CPUs' TLBs: one per page written since the last
     * force. A page no longer mapped costs writeback nothing, and the {@code madvise} flushes the TLBs once for the
     * whole range. Only the range since the last call: a page behind it that was mapped again (a reader's fault, an
     * index entry) is left to {@link #dropWrittenPages()}, once per sync interval, rather than walked on every force,
     * and so is a range whose drop did not happen (the chunk could not be reserved, the POSIX binding is not loaded
     * yet, the {@code madvise} failed): the next call starts where this one stopped either way.
     *
     * <p>Under the owner's lock, which the {@code madvise} does not need: the returned range holds a reservation of its
     * mapping chunk, so the chunk stays mapped even if an append moves the appender past it meanwhile, and
     * {@link WrittenRange#dropAndRelease()} drops the pages and gives the reservation back, on any thread, with no lock
     * held (an {@code madvise} waits for the other CPUs' TLB flushes, and appends would wait for it).
     */
    public WrittenRange pagesWrittenSinceLastForce() {
        if (!ResidentPages.beforeForce() || chronicle == null) {
            return null;
        }
        return writtenPages.sinceLastForce(mappedAppendBytes());
    }

    /** The appender's bytes, if they are in a mapping chunk; null if nothing was appended since the log opened. */
    private Bytes<?> mappedAppendBytes() {
        Wire wire = appender.wire();
        if (wire == null) {
            return null;
        }
        Bytes<?> bytes = wire.bytes();
        return bytes.bytesStore() instanceof MappedBytesStore ? bytes : null;
    }

    // ---------------------------------------------------------------- reads

    /**
     * Reads the record with id {@code id} into this log's random-read codec; returns the record's
     * length, or -1 if no record has that id (never written, or its segment was reclaimed). Check the
     * record with {@code randomReadCodec().loaded(length)}.
     */
    public int read(long id) {
        if (randomTailer == null) {
            randomTailer = chronicle().createTailer();
            randomTailer.singleThreadedCheckDisabled(true);
        }
        if (!randomTailer.moveToIndex(id)) {
            return -1;
        }
        int[] length = new int[1];
        return SegmentRecords.readNext(randomTailer, randomReadCodec, length) == id ? length[0] : -1;
    }

    /** The codec {@link #read(long)} fills; valid until the next read. */
    public RecordCodec randomReadCodec() {
        return randomReadCodec;
    }

    /** Drops the tailer of {@link #read(long)}, which may map a segment about to be deleted. */
    public void releaseRandomTailer() {
        if (randomTailer != null) {
            randomTailer.close();
            randomTailer = null;
        }
    }

    /** A new tailer at the start of the log; any thread may call this. Close it when done. */
    public ExcerptTailer newTailer() {
        ExcerptTailer tailer = chronicle().createTailer();
        tailer.singleThreadedCheckDisabled(true);
        return tailer;
    }

    /**
     * Positions {@code tailer} at {@code id} and returns true; or, if no record has that id, at the
     * oldest record; or at the end if {@code id} is -1.
     */
    public boolean position(ExcerptTailer tailer, long id) {
        if (id >= 0 && tailer.moveToIndex(id)) {
            return true;
        }
        if (id >= 0) {
            tailer.toStart();
        } else {
            tailer.toEnd();
        }
        return false;
    }

    /** The exact bytes of the unacknowledged messages, counted over these segments and their tallies. */
    public BacklogBytes backlogBytes() {
        return backlogBytes;
    }

    /** Receives the records a {@link #forEachRecordAfter} pass reads. */
    public interface RecordVisitor {
        /** {@code codec} holds a record that checked out; valid until this returns. */
        void record(long id, RecordCodec codec);
    }

    /**
     * Reads every record with an id above {@code afterId} (all of them if it is -1), acknowledged or
     * not, in id order, into a codec of its own; damaged records are skipped and counted. Returns the
     * number skipped. Any thread; the records may be appended to meanwhile.
     */
    public long forEachRecordAfter(long afterId, RecordVisitor visitor) {
        if (chronicle == null) {
            return 0; // no segment on disk at open and nothing appended since: no record, and no need to open Chronicle
        }
        RecordCodec codec = new RecordCodec();
        int[] length = new int[1];
        try (ExcerptTailer tailer = newTailer()) {
            if (afterId >= 0 && position(tailer, afterId)) {
                if (SegmentRecords.readNext(tailer, codec, length) < 0) {
                    return 0;
                }
            }
            return SegmentRecords.visitFrom(tailer, afterId + 1, codec, length, visitor);
        }
    }

    /**
     * As {@link #forEachRecordAfter}, from the record {@code fromId} on, which must be one this log holds (else every
     * record is read to find the first above it).
     */
    public long forEachRecordFrom(long fromId, RecordVisitor visitor) {
        if (chronicle == null) {
            return 0;
        }
        RecordCodec codec = new RecordCodec();
        int[] length = new int[1];
        try (ExcerptTailer tailer = newTailer()) {
            position(tailer, fromId);
            return SegmentRecords.visitFrom(tailer, fromId, codec, length, visitor);
        }
    }

    /**
     * Rule "a sealed segment ends in its marker" ({@link SegmentEndMarkers}): writes Chronicle's end marker into every
     * segment before {@code lastSegment} that lacks it; returns those written into, to be forced. Recovery, before any
     * reader is opened.
     */
    public List<Integer> writeMissingEndMarkers(int lastSegment) {
        return SegmentEndMarkers.writeMissing(queueName, chronicle(), lastSegment);
    }

    /** The oldest segment Chronicle knows of (-1 if none). */
    public int firstSegment() {
        return Math.max(-1, chronicle().firstCycle());
    }

    /**
     * The records Chronicle's index counts in {@code segment}, from its header and index, without reading a record.
     *
     * @throws StorageException naming the file if Chronicle cannot read its header or index (cut short in them)
     */
    public long indexedRecords(int segment) {
        try (ExcerptTailer counter = tailerAtStart(firstSegment())) {
            return counter.excerptsInCycle(segment);
        } catch (RuntimeException | InternalError e) {
            throw e instanceof StorageException se ? se : unreadable(segment, e);
        }
    }

    /** A new tailer; Chronicle reads the header of the first segment, {@code first}, to put it at the start. */
    private ExcerptTailer tailerAtStart(int first) {
        try {
            return chronicle().createTailer();
        } catch (RuntimeException | InternalError e) {
            throw unreadable(first, e);
        }
    }

    private StorageException unreadable(int segment, Throwable e) {
        return new StorageException("queue '" + queueName + "': " + SegmentFiles.unreadable(SegmentFiles.file(segmentDirectory, segment), e), e);
    }

    /** The id of the last record (-1 if none). */
    public long lastIndex() {
        return chronicle().lastIndex();
    }

    // ---------------------------------------------------------------- tallies

    /** Per segment on disk, oldest first: records and bytes. Live view; guarded by the owner's lock. */
    public NavigableMap<Integer, SegmentTally> tallies() {
        return tallies;
    }

    /**
     * Takes the message bytes and transaction-staged records of {@code segment} from a pass that read every one of its
     * records (recovery's check of the last segment), so that the backlog's byte count need not read the segment again;
     * appends keep the figures from then on. Ignored unless {@code records} is the segment's record count, or if the
     * figures are known already.
     */
    public void learnTally(int segment, long records, long messageBytes, long stagedRecords) {
        SegmentTally tally = tallies.get(segment);
        if (tally != null && tally.messages == records && tally.messageBytes < 0) {
            tally.messageBytes = messageBytes;
            tally.stagedRecords = stagedRecords;
        }
    }

    /** The message bytes of the last append's segment through that append, -1 if not known (or no append yet). */
    public long lastAppendSegmentMessageBytes() {
        return lastAppendTally == null ? -1 : lastAppendTally.messageBytes;
    }

    /** The staged records of the last append's segment through that append (meaningful when its message bytes are known). */
    public long lastAppendSegmentStaged() {
        return lastAppendTally == null ? 0 : lastAppendTally.stagedRecords;
    }

    /** The message bytes of {@code segment}'s records, -1 if not known (or not on disk). */
    public long messageBytes(int segment) {
        SegmentTally t = tallies.get(segment);
        return t == null ? -1 : t.messageBytes;
    }

    /** The records a transaction staged in {@code segment} (meaningful when its message bytes are known). */
    public long stagedRecords(int segment) {
        SegmentTally t = tallies.get(segment);
        return t == null ? 0 : t.stagedRecords;
    }

    /** Messages (records) in {@code segment}, 0 if it is not on disk. */
    public long messages(int segment) {
        SegmentTally t = tallies.get(segment);
        return t == null ? 0 : t.messages;
    }

    /**
     * Fills the tallies from Chronicle's index of each segment file, without reading records, and
     * calls {@code counted} with each non-empty segment and its record count. For recovery.
     */
    public void countSegments(SegmentCounter counted, boolean exactRollPoint) {
        SingleChronicleQueue chronicle = chronicle();
        NavigableSet<Long> cycles = chronicle.listCyclesBetween(chronicle.firstCycle(), chronicle.lastCycle());
        long last = cycles.isEmpty() ? -1 : cycles.last();
        try (ExcerptTailer counter = tailerAtStart(cycles.isEmpty() ? 0 : cycles.first().intValue())) {
            for (long cycleLong : cycles) {
                int cycle = (int) cycleLong;
                long count;
                try {
                    count = counter.excerptsInCycle(cycle);
                } catch (RuntimeException | InternalError e) {
                    throw unreadable(cycle, e);
                }
                // The last segment is the one appends may continue: its bytes decide where it is sealed, and so every
                // later id, which on a cluster must not depend on whether the store was opened again in between (every
                // node gives a message the same id, docs/replication.md R6). So they are counted as append counts them,
                // record by record (StoreConfig.exactRollPoint); the others by their file, for reclaim's figures.
                long bytes = exactRollPoint && cycleLong == last && count > 0 ? SegmentBytes.ofRecords(this, cycle) : SegmentBytes.ofFile(chronicle, cycle);
                SegmentTally tally = new SegmentTally(count, bytes);
                if (count == 0) {
                    tally.messageBytes = 0;
                } else if (cycleLong != last) {
                    // A sealed segment's tally file, if it counts the records Chronicle counts (a hint: else it is read).
                    SegmentTallyFile.Tally kept = SegmentTallyFile.read(segmentDirectory, cycle);
                    if (kept != null && kept.records() == count) {
                        tally.messageBytes = kept.messageBytes();
                        tally.stagedRecords = kept.stagedRecords();
                    }
                }
                tallies.put(cycle, tally);
                if (count > 0) {
                    counted.segment(cycle, count);
                }
            }
        }
    }

    /** Receives a segment and its record count. */
    @FunctionalInterface
    public interface SegmentCounter {
        void segment(int segment, long messages);
    }

    // ---------------------------------------------------------------- reclaim

    /**
     * Takes {@code segment} out of the log: forgets its tally and renames its file to
     * {@code .cq4.deleting}, out of Chronicle's sight (call {@link #refreshListing()} after a batch).
     * Returns the removed tally (null if the segment was not on disk); the renamed file is then
     * {@link #deletingFile(int)}, for the releaser to unlink.
     *
     * @throws IOException if the rename failed; the tally is gone, the file stays (finished at the next open)
     */
    public SegmentTally removeSegment(int segment) throws IOException {
        SegmentTally tally = tallies.remove(segment);
        if (tally == null) {
            return null;
        }
        releaseRandomTailer();
        SegmentTallyFile.delete(segmentDirectory, segment);
        try {
            Files.move(SegmentFiles.file(segmentDirectory, segment), deletingFile(segment), StandardCopyOption.ATOMIC_MOVE);
        } catch (NoSuchFileException gone) {
            // already renamed or deleted: nothing left to take out of Chronicle's sight
        }
        return tally;
    }

    /** Where {@link #removeSegment(int)} renames a segment's file. */
    public Path deletingFile(int segment) {
        return segmentDirectory.resolve(SegmentFiles.fileName(segment).replace(SegmentFiles.SUFFIX, SegmentFiles.DELETING_SUFFIX));
    }

    /** Tells Chronicle to list the directory again, after segments were removed. */
    public void refreshListing() {
        if (chronicle != null) {
            chronicle.refreshDirectoryListing(); // else Chronicle has not listed it yet
        }
    }

    @Override
    public synchronized void close() {
        closed = true;
        closeChronicle();
    }

    private synchronized void closeChronicle() {
        releaseRandomTailer();
        if (chronicle == null) {
            return;
        }
        appender.close();
        Closeable.closeQuietly(metadataValue);
        chronicle.close();
    }
}
