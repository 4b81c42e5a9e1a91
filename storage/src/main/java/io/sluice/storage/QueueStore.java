package io.sluice.storage;

import io.sluice.storage.ack.AckFiles;
import io.sluice.storage.ack.AckLog;
import io.sluice.storage.ack.AckResult;
import io.sluice.storage.ack.AckStateReader;
import io.sluice.storage.dedup.ProducerCheckpoint;
import io.sluice.storage.durability.AckJournalForces;
import io.sluice.storage.durability.Durability;
import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.durability.ForcedMark;
import io.sluice.storage.durability.SegmentSyncer;
import io.sluice.storage.readahead.ReadAhead;
import io.sluice.storage.readahead.ReaderCursor;
import io.sluice.storage.reclaim.ReclaimPolicy;
import io.sluice.storage.reclaim.Reclaimer;
import io.sluice.storage.reclaim.RelocationIntent;
import io.sluice.storage.recovery.QueueRecovery;
import io.sluice.storage.segment.FileReleaser;
import io.sluice.storage.segment.RecordCodec;
import io.sluice.storage.segment.SegmentLog;
import io.sluice.storage.segment.SegmentRollCycle;
import io.sluice.storage.snapshot.SnapshotFiles;
import net.openhft.chronicle.queue.ExcerptTailer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongConsumer;
import java.util.function.LongPredicate;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * One queue's storage, as the broker sees it: a thread-safe facade over the parts that do the work,
 * each described in docs/storage.md ("Threads and locks"):
 * <ul>
 *   <li>{@link SegmentLog}: the segments (the only class touching Chronicle Queue);</li>
 *   <li>{@link AckLog}: the ack state and its journal and checkpoint;</li>
 *   <li>{@link Durability}: written and durable positions, group commit, pending futures;</li>
 *   <li>{@link Reclaimer}: deleting acknowledged segments and relocating stragglers;</li>
 *   <li>{@link ReaderCursor}: the read-ahead of each lagging reader;</li>
 *   <li>{@link QueueRecovery}: what opening the queue recovered;</li>
 *   <li>{@link RecordAppender}: checking, encoding and writing each record (a relocated copy's too);</li>
 *   <li>{@link RecordReads}: turning records into messages, by id and for readers;</li>
 *   <li>{@link AckUpdates}: writing acks and delivery counts, and asking reclaim for a pass.</li>
 * </ul>
 *
 * <p>Threads: every public method is thread-safe. Appends, acks and reads by id serialise on one
 * lock, {@link #lock}, held only for the in-memory work and the store into the mapped file, never for
 * a segment sync. The store's flusher thread forces segments ({@link #flush}) and reclaims
 * ({@link #reclaim}); the read-ahead thread runs the readers' cursors.
 *
 * <p>Ids are Chronicle indexes: {@code segment << 32 | sequence}. They increase with every append
 * and never repeat, but are not contiguous across segments.
 */
public final class QueueStore {
    /** What headers the broker adds to a message it forwards may take beyond {@code maxMessageBytes}. */
    public static final int HEADER_HEADROOM_BYTES = 1024;

    private static final ByteBuffer NO_BYTES = ByteBuffer.allocate(0);
    private static final Logger LOG = LoggerFactory.getLogger(QueueStore.class);

    private final String name;
    private final Path directory;
    private final Path segmentDirectory;
    private final StoreConfig config;
    private final LongSupplier clock;
    private final Path ackJournalFile;

    /**
     * Guards the segment log, the ack state, the readers' skip sets and the counters (the appender's, the
     * corrupt records'); the parts' methods named {@code ...Locked} run under it.
     */
    private final ReentrantLock lock = new ReentrantLock();
    private final SegmentLog log;
    private final AckLog ackLog;
    private final AckStateReader acks;
    private final Durability durability;
    private final AckJournalForces ackForces;
    private final Reclaimer reclaimer;
    private final SegmentSyncer syncer;
    private final OpenReaders readers;

    private final ProducerCheckpointWrites producerCheckpoints;
    private final CorruptRecords corruptRecords;
    private final RecordAppender appender;
    private final RecordReads reads;
    private final AckUpdates ackUpdates;
    private final WrittenPageDrops writtenPages;
    private volatile boolean closed;
    private final long recordsVerifiedAtOpen;
    private final QueueIncarnation incarnation;

    private QueueStore(String name, Path directory, StoreConfig config, DiskSpaceGuard diskGuard, LongSupplier clock,
                       Runnable wakeFlusher, ReadAhead readAhead, FileReleaser releaser, FileForcer forcer, AckLog createdAcks,
                       boolean afterUncleanStop) {
        this.readers = new OpenReaders(readAhead);
        this.ackJournalFile = directory.resolve("acks").resolve(AckFiles.JOURNAL);
        this.name = name;
        this.directory = directory;
        this.segmentDirectory = directory.resolve("segments");
        this.config = config;
        this.clock = clock;
        this.producerCheckpoints = new ProducerCheckpointWrites(name, directory);
        long started = System.nanoTime();
        this.syncer = new SegmentSyncer(segmentDirectory, releaser, forcer);
        // The log reports seals to durability, which exists only once the log is recovered: the
        // forwarding lambda reads the field when a roll happens, never during recovery.
        QueueRecovery.Recovered recovered = QueueRecovery.open(name, directory, config, this::segmentSealed, this::enteringSegment,
                createdAcks, forcer, afterUncleanStop);
        this.log = recovered.log();
        this.ackLog = recovered.ackLog();
        this.acks = ackLog.state();
        // Every step after recovery closes what recovery opened when it fails: a refused queue keeps no file (the
        // incarnation's write, for one, needs a descriptor after recovery took its own, and disk space).
        try {
            this.incarnation = QueueIncarnation.open(directory, acks.unackedCount() > 0);
            // The journal grows only within the disk guard's budget, so it never eats into the reserve that
            // checkpoints and relocation need; refused, it rotates instead (AckLog, "Growth, then rotation").
            ackLog.growthBudget(diskGuard::tryReserve, clock);
            this.recordsVerifiedAtOpen = recovered.verifiedRecords();
            this.writtenPages = new WrittenPageDrops(lock, log, ackLog, this::isClosed);
            this.durability = new Durability(name, config.durability(), config.syncIntervalMs(), syncer, wakeFlusher,
                    writtenPages::beforeForce, recovered.lastWritten(), new ForcedMark(directory, segmentDirectory));
            this.corruptRecords = new CorruptRecords(name, segmentDirectory, ackLog, durability, recovered.corruptRecords(),
                    this::reclaimWanted);
            this.ackForces = new AckJournalForces(name, ackJournalFile, forcer, ackLog::force, durability, config.syncIntervalMs(),
                    wakeFlusher);
            this.appender = new RecordAppender(name, config, diskGuard, clock, log, ackLog, durability, lock, this::ensureOpen);
            ReclaimPolicy policy = new ReclaimPolicy(config.relocateMaxLiveRatio(), config.relocateMaxLiveMessages(),
                    config.relocateAfterMs() * 1_000_000L);
            this.reclaimer = new Reclaimer(name, lock, log, ackLog, policy, releaser, readers, appender::writeLocked,
                    corruptRecords::discardLocked, Reclaimer.Forcing.of(durability::forceRange, ackForces::force,
                            () -> durability.failure() != null), e -> AckUpdates.failure(name, durability, e),
                    new RelocationIntent(directory), diskGuard, config.relocationFloorBytes(), wakeFlusher);
            this.ackUpdates = new AckUpdates(name, log, ackLog, reclaimer, durability);
            this.reads = new RecordReads(name, segmentDirectory, log, ackLog, durability, corruptRecords);
            // Before the queue is in the flusher's sight, whose first pass may come before the owner replays (R6).
            producerStateCoveredThrough(ProducerCheckpoint.coveredAtOpen(directory, !log.tallies().isEmpty()));
        } catch (RuntimeException | Error e) {
            recovered.closeAfterFailure(name);
            throw e;
        }
        LOG.info("Queue '{}' opened in {} ms: {} segments, {} unacknowledged messages, next append to segment {}.",
                name, (System.nanoTime() - started) / 1_000_000, log.tallies().size(), acks.unackedCount(), log.writeSegment());
    }

    /** {@code afterUncleanStop}: the store was not closed cleanly, so recovery forces the segments first. */
    static QueueStore open(String name, Path directory, StoreConfig config, DiskSpaceGuard diskGuard, LongSupplier clock,
                           Runnable wakeFlusher, ReadAhead readAhead, FileReleaser releaser, FileForcer forcer,
                           boolean afterUncleanStop) {
        return new QueueStore(name, directory, config, diskGuard, clock, wakeFlusher, readAhead, releaser, forcer, null,
                afterUncleanStop);
    }

    /**
     * Opens a new queue whose ack files were created in steps and installed as {@code createdAcks}
     * ({@link NewQueues}); with null, as {@link #open}.
     */
    static QueueStore openCreated(String name, Path directory, StoreConfig config, DiskSpaceGuard diskGuard, LongSupplier clock,
                                  Runnable wakeFlusher, ReadAhead readAhead, FileReleaser releaser, FileForcer forcer, AckLog createdAcks) {
        return new QueueStore(name, directory, config, diskGuard, clock, wakeFlusher, readAhead, releaser, forcer, createdAcks, false);
    }

    /** The directories whose entries a new queue added, but for the directory of queues: segments, acks, the queue's own. */
    List<Path> createdDirectories() {
        return List.of(segmentDirectory, ackJournalFile.getParent(), directory);
    }

    /**
     * Producer state is durable through record {@code id} (-1: none; {@link Long#MAX_VALUE}: none kept):
     * reclaim keeps every segment from {@code id}'s on (rule R6, docs/storage.md). A queue starts with
     * {@link ProducerCheckpoint#coveredAtOpen}: an owner keeping no producer state passes {@link Long#MAX_VALUE}.
     */
    public void producerStateCoveredThrough(long id) {
        reclaimer.keepFrom(id < 0 ? 0 : SegmentRollCycle.INSTANCE.toCycle(id));
    }

    /**
     * Writes a producer checkpoint image ({@link ProducerCheckpoint#encode}) into this queue's
     * directory, unless the queue is closing or closed: a late write must never land in the directory
     * of a deleted queue, or of the queue re-created under its name, whose producers it would claim.
     */
    public void writeProducerCheckpoint(ByteBuffer image) throws IOException {
        producerCheckpoints.write(image);
    }

    /** Every record after {@code afterId}, acknowledged or not; see {@link SegmentLog#forEachRecordAfter}. */
    public long forEachRecordAfter(long afterId, SegmentLog.RecordVisitor visitor) {
        ensureOpen();
        return log.forEachRecordAfter(afterId, visitor);
    }

    /** Every record from {@code fromId}, an id this store holds, on; see {@link SegmentLog#forEachRecordFrom}. */
    public long forEachRecordFrom(long fromId, SegmentLog.RecordVisitor visitor) {
        ensureOpen();
        return log.forEachRecordFrom(fromId, visitor);
    }

    /** Asks reclaim for a pass; read through the field, as the reclaimer is built after the parts that ask. */
    private void reclaimWanted() {
        reclaimer.wanted();
    }

    /** A roll sealed {@code segment} (under the lock): durability must force it, and reclaim may look at it. */
    private void segmentSealed(int segment) {
        durability.sealed(segment);
        reclaimer.wanted();
    }

    /**
     * Before an append writes its record into {@code segment}, under the lock: rule "descriptors are taken by
     * the append" (docs/storage.md), so that an append refused for want of them leaves no record behind.
     */
    private void enteringSegment(int segment) {
        try {
            syncer.open(segment);
        } catch (StorageFilesExhaustedException e) {
            throw e;
        } catch (IOException e) {
            throw durability.fail("opening a segment for forcing", e);
        }
    }

    public String name() {
        return name;
    }

    public Path directory() {
        return directory;
    }

    /** Which incarnation of its name this queue is: another after a delete and a creation under the name. */
    public QueueIncarnation incarnation() {
        return incarnation;
    }

    /** This store's settings (its {@link MessageStore}'s). */
    public StoreConfig config() {
        return config;
    }

    public DurabilityMode durability() {
        return config.durability();
    }

    // ---------------------------------------------------------------- append

    /** Appends a message with empty producer identity; see below. */
    public long append(byte[] headers, byte[] payload) {
        return append(0, 0, headers == null ? null : ByteBuffer.wrap(headers), ByteBuffer.wrap(payload));
    }

    /**
     * Appends one message and returns its id. The message is stored (it survives a process crash) when
     * this returns; it is durable under the store's policy once {@link #durableIndex()} reaches the id,
     * which {@link #whenDurable(long)} and the durability listener report.
     *
     * @throws MessageTooLargeException if headers plus payload exceed the configured maximum
     * @throws StorageFullException     if free disk space is below the reserved margin
     */
    public long append(long producerId, long producerSequence, ByteBuffer headers, ByteBuffer payload) {
        ByteBuffer h = headers == null ? NO_BYTES : headers;
        ByteBuffer p = payload == null ? NO_BYTES : payload;
        return appender.append(0, -1, producerId, producerSequence, h, h.position(), h.remaining(), p, p.position(), p.remaining(), 0);
    }

    /**
     * Appends one message whose encoded headers and payload are regions of {@code source} (absolute
     * offsets; the buffer's position is neither used nor moved): a broker holding a whole PUBLISH frame
     * in one buffer stores each of its messages without creating a slice per message. Otherwise as
     * {@link #append(long, long, ByteBuffer, ByteBuffer)}.
     */
    public long append(long producerId, long producerSequence, ByteBuffer source, int headersOffset, int headersLength,
                       int payloadOffset, int payloadLength) {
        return appender.append(0, -1, producerId, producerSequence, source, headersOffset, headersLength, source, payloadOffset,
                payloadLength, 0);
    }

    /**
     * A cluster node stores a message of the replicated PUBLISH entry at {@code logPosition} (rule R4a of
     * docs/replication.md): the record says so ({@link RecordCodec#FLAG_LOG_POSITION}), in the same bytes as the
     * message, so that what a restart finds stored and what it finds applied are one. The entry is committed: the
     * leader admitted the message under its own limits, so this store's {@code maxMessageBytes} does not refuse it, only
     * what no record can hold ({@link StoreConfig#storableMessageBytes}; rule R2). Otherwise as
     * {@link #append(long, long, ByteBuffer, int, int, int, int)}.
     */
    public long appendReplicated(long logPosition, long producerId, long producerSequence, ByteBuffer source, int headersOffset,
                                 int headersLength, int payloadOffset, int payloadLength) {
        if (logPosition < 0) {
            throw new IllegalArgumentException("log position " + logPosition + " is negative");
        }
        return appender.append(RecordCodec.FLAG_LOG_POSITION, logPosition, producerId, producerSequence, source, headersOffset,
                headersLength, source, payloadOffset, payloadLength, RecordAppender.COMMITTED);
    }

    /** A message transaction {@code transaction} staged, {@link StoredMessage#transactional()}, its number as producer id; as above. */
    public long appendStaged(long transaction, ByteBuffer source, int headersOffset, int headersLength, int payloadOffset,
                             int payloadLength) {
        return appender.append(RecordCodec.FLAG_TRANSACTIONAL, -1, transaction, RecordCodec.STAGED_MESSAGE, source, headersOffset,
                headersLength, source, payloadOffset, payloadLength, 0);
    }

    /**
     * The commit record of transaction {@code transaction}, written after the messages it staged here
     * (the broker's encoding, in the payload): staged too, so never delivered, with
     * {@link StoredMessage#producerSequence()} {@link RecordCodec#STAGED_COMMIT_RECORD}. Being later in
     * the same log, it is durable only once every message staged before it is. As above otherwise.
     */
    public long appendStagedCommitRecord(long transaction, ByteBuffer record) {
        return appender.append(RecordCodec.FLAG_TRANSACTIONAL, -1, transaction, RecordCodec.STAGED_COMMIT_RECORD, NO_BYTES, 0, 0, record,
                record.position(), record.remaining(), 0);
    }

    /**
     * Appends a message the broker itself forwards with headers it added (a dead-letter copy): its
     * headers plus payload may exceed the maximum by up to {@link #HEADER_HEADROOM_BYTES}, so that a
     * message accepted at the limit can always be forwarded. The record is marked forwarded: its
     * producer identity is the original publisher's, which the producer state of this queue ignores.
     * Otherwise as {@link #append(long, long, ByteBuffer, ByteBuffer)}.
     */
    public long appendForwarded(long producerId, long producerSequence, ByteBuffer headers, ByteBuffer payload) {
        return appender.append(RecordCodec.FLAG_FORWARDED, -1, producerId, producerSequence, headers, headers.position(), headers.remaining(),
                payload, payload.position(), payload.remaining(), HEADER_HEADROOM_BYTES);
    }

    /**
     * A cluster node stores a copy a committed entry holds (a dead-letter copy, rule R8, or a transaction's message, R13):
     * as {@link #appendForwarded}, refused only above what a record can hold, as {@link #appendReplicated} is.
     */
    public long appendCommittedCopy(long producerId, long producerSequence, ByteBuffer headers, ByteBuffer payload) {
        return appender.append(RecordCodec.FLAG_FORWARDED, -1, producerId, producerSequence, headers, headers.position(), headers.remaining(),
                payload, payload.position(), payload.remaining(), RecordAppender.COMMITTED);
    }

    /** The store's clock (epoch ms): the time base of {@link StoredMessage#timestampMillis()}. */
    public long nowMillis() {
        return clock.getAsLong();
    }

    /** The highest id that is durable under the store's policy; every id at or below it is too. */
    public long durableIndex() {
        return durability.durableIndex();
    }

    /** Copies the queue's files into {@code target} ({@link SnapshotFiles#copyQueue}) under the lock, so nothing changes them meanwhile. */
    public void copyTo(Path target) throws IOException {
        lock.lock();
        try {
            ensureOpen();
            SnapshotFiles.copyQueue(directory, target, log.writeSegment());
        } finally {
            lock.unlock();
        }
    }

    /** The highest id appended. */
    public long writtenIndex() {
        return durability.writtenIndex();
    }

    /**
     * Sets the callback told, on the flusher thread, each time the durable index advances (with the
     * new value). Only {@link DurabilityMode#ALWAYS} defers durability; in the other modes an id is
     * durable as soon as {@code append} returns.
     */
    public void durabilityListener(LongConsumer listener) {
        durability.listener(listener);
    }

    /**
     * Someone waits for {@code id} to be durable, through the {@link #durabilityListener}: the flusher forces through it
     * (rule "force what is awaited", docs/storage.md). An append alone is forced only with the next demanded force, or
     * a sync interval later. {@link #whenDurable} demands by itself.
     */
    public void demandDurable(long id) {
        durability.demand(id);
    }

    /** A future completed (with the id) once {@code id} is durable. */
    public CompletableFuture<Long> whenDurable(long id) {
        return durability.whenDurable(id);
    }

    /**
     * A future completed once the ack journal is forced past every ack and delivery recorded before this
     * call, in every durability mode (the journal is forced in each). {@code asksEarly}: it asks the
     * flusher for an early force, shared by every caller meanwhile; else it waits for the next force,
     * periodic (at most the sync interval away) or asked for by another, for work that only has to
     * follow durability. Fails if the queue's storage failed or the queue closed.
     */
    public CompletableFuture<Void> whenAcksDurable(boolean asksEarly) {
        long records;
        lock.lock();
        try {
            if (closed) {
                return CompletableFuture.failedFuture(new StorageException("queue '" + name + "' is closed"));
            }
            records = ackLog.journalRecords();
        } finally {
            lock.unlock();
        }
        return ackForces.whenForcedPast(records, asksEarly);
    }

    // ---------------------------------------------------------------- acks

    /** Acknowledges one message. Ids of messages already acknowledged (or reclaimed) are ALREADY_ACKED. */
    public AckResult ack(long id) {
        lock.lock();
        try {
            ensureOpen();
            return ackUpdates.ackLocked(id);
        } finally {
            lock.unlock();
        }
    }

    /** Acknowledges every stored message with an id in {@code [fromId, toIdInclusive]}; returns how many were newly acknowledged. */
    public long ackRange(long fromId, long toIdInclusive) {
        lock.lock();
        try {
            ensureOpen();
            return ackUpdates.ackRangeLocked(fromId, toIdInclusive);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Acknowledges every stored message except those of {@code keep} (ascending ids), under one lock, in ranges
     * ({@link AckLog#ackAllExcept}): the lock is held for work that follows the kept ids and the segments, never a step
     * a message acknowledged. Returns how many were newly acknowledged. If the ack state cannot be written, all of it
     * is acknowledged in memory all the same before the failure (an {@link java.io.UncheckedIOException}; the queue's
     * storage is failed) is thrown.
     */
    public long ackAllExcept(long[] keep) {
        return lockedOpen(() -> ackUpdates.ackAllExceptLocked(keep));
    }

    /**
     * Acknowledges every message with an id in {@code [fromId, toIdInclusive]} but {@code keep}'s (ascending) under one
     * lock, a range ack per gap, and returns what that newly acknowledged ({@link AckUpdates#ackRangeExceptLocked}). For
     * a store that relocates nothing (a cluster node's), as {@link #unackedCount} and {@link #nextUnacked}: ids are slots.
     * If the ack state cannot be written, all of it is acknowledged in memory all the same before the failure, an
     * {@link AckNotWrittenException} saying what that acknowledged, is thrown.
     */
    public AckedRange ackRangeExcept(long fromId, long toIdInclusive, long[] keep) {
        return lockedOpen(() -> ackUpdates.ackRangeExceptLocked(fromId, toIdInclusive, keep));
    }

    /** Unacknowledged messages with ids in {@code [fromId, toIdInclusive]}, counted a bitmap word at a time. */
    public long unackedCount(long fromId, long toIdInclusive) {
        return toIdInclusive < fromId ? 0 : locked(() -> acks.unackedCount(fromId, toIdInclusive));
    }

    /** The lowest unacknowledged id at or after {@code fromId}, or -1. */
    public long nextUnacked(long fromId) {
        lock.lock();
        try {
            return acks.nextUnackedId(fromId);
        } finally {
            lock.unlock();
        }
    }

    /** Records that the broker delivered {@code id} for the {@code count}-th time; persisted with the ack state. */
    public void recordDelivery(long id, int count) {
        lock.lock();
        try {
            ensureOpen();
            ackUpdates.recordDeliveryLocked(id, count);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Records {@code count} deliveries at once, under one lock: {@code ids[i]} delivered for the
     * {@code counts[i]}-th time (see {@link #recordDelivery}). If the ack state cannot be written, every one is
     * recorded in memory all the same before the failure is thrown.
     */
    public void recordDeliveries(long[] ids, int[] counts, int count) {
        lock.lock();
        try {
            ensureOpen();
            ackUpdates.recordDeliveriesLocked(ids, counts, count);
        } finally {
            lock.unlock();
        }
    }

    /** Delivery count recorded for {@code id}, 0 if never delivered. */
    public int deliveryCount(long id) {
        lock.lock();
        try {
            return acks.deliveryCount(id);
        } finally {
            lock.unlock();
        }
    }

    public boolean isAcked(long id) {
        lock.lock();
        try {
            return acks.isAcked(acks.physicalId(id));
        } finally {
            lock.unlock();
        }
    }

    /** Calls {@code visitor} with the id of every unacknowledged message, in store order (relocated ones by their original id). */
    public void forEachUnacked(LongConsumer visitor) {
        long[] ids;
        lock.lock();
        try {
            ids = acks.unackedOriginalIds();
        } finally {
            lock.unlock();
        }
        for (long id : ids) {
            visitor.accept(id);
        }
    }

    /**
     * For the drop-oldest policy and the age of the oldest ready message: see
     * {@link io.sluice.storage.ack.AckStateReader#oldestUnacked}. {@code skip} runs under the queue's
     * lock and must not call back into this store.
     */
    public long oldestUnacked(LongPredicate skip, int maxSkips) {
        lock.lock();
        try {
            return acks.oldestUnacked(skip, maxSkips);
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- reads

    /** A reader positioned at the oldest unacknowledged message. Close it when done. */
    public QueueReader openReader() {
        lock.lock();
        try {
            ensureOpen();
            ExcerptTailer tailer = log.newTailer();
            long first = acks.firstUnackedId();
            boolean atFirst = log.position(tailer, first);
            int segment = first < 0 ? log.writeSegment()
                    : atFirst ? SegmentRollCycle.INSTANCE.toCycle(first)
                    : Math.max(0, log.firstSegment());
            QueueReader reader = new QueueReader(this, tailer, segment, reclaimer::wanted);
            readers.opened(reader, !readers.readsAhead() || config.readAheadMessages() <= 0 ? null
                    : new ReaderCursor(reader.followed(), log, durability::writtenIndex, this::segmentMessages,
                            first >= 0 ? first : log.lastIndex() + 1, config.readAheadMessages()));
            return reader;
        } finally {
            lock.unlock();
        }
    }

    void readerClosed(QueueReader reader) {
        readers.closed(reader);
        reclaimer.wanted();
    }

    /**
     * Reads one message by id, for redelivery. Returns a detached copy, or null if the message is
     * acknowledged or was never stored.
     *
     * @throws CorruptRecordException if the record fails its checksum; it is discarded (acknowledged and counted) first, as a reader discards it
     * @throws StorageFailedException if reading the segment faulted (SIGBUS); the queue is failed then
     */
    public StoredMessage read(long id) {
        lock.lock();
        try {
            ensureOpen();
            return reads.readLocked(id);
        } finally {
            lock.unlock();
        }
    }

    /**
     * For a reader: fills {@code message} and returns true if the record at {@code physical} is
     * unacknowledged and intact, and not a relocated copy of a message {@code reader} has already
     * returned; a damaged one ({@code problem} not null) is discarded instead.
     */
    boolean fillIfUnacked(QueueReader reader, StoredMessage message, RecordCodec codec, long physical, String problem) {
        lock.lock();
        try {
            return reads.fillIfUnackedLocked(reader, message, codec, physical, problem);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Acknowledges {@code count} ids from {@code ids} under one lock; returns how many were newly acknowledged. If the
     * ack state cannot be written, every one is acknowledged in memory all the same before the failure is thrown.
     */
    public int ackAll(long[] ids, int count) {
        lock.lock();
        try {
            ensureOpen();
            return ackUpdates.ackAllLocked(ids, count);
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- figures

    /** The queue's backlog figures; O(segments), no I/O. */
    public BacklogStats stats() {
        return locked(() -> BacklogStats.of(log.tallies(), acks, appender.appendedMessagesLocked(), reclaimer));
    }

    /**
     * Headers plus payload of every unacknowledged message, exact: the unit of the broker's byte
     * quotas (and of {@code max-message-bytes}). Reads the length of every unacknowledged record once,
     * sequentially, except in the sealed segments whose tally answers for them (rule "a sealed segment's
     * tally", docs/storage.md), so the broker calls it once, when it opens the queue, and keeps the figure
     * itself from then on. A relocated copy counts once, in its new slot. The pass hands {@code staged} each
     * unacknowledged record a transaction staged: recovery finds them without a pass of its own.
     */
    public long unackedMessageBytes(StagedRecordVisitor staged) {
        return lockedOpen(() -> log.backlogBytes().messageBytesFrom(acks.firstUnackedId(), acks::isSlotAcked, acks::unackedCount, staged));
    }

    /** Records recovery read and checked when this store opened the queue (rule "the forced mark"); for tests. */
    long recordsVerifiedAtOpen() {
        return recordsVerifiedAtOpen;
    }

    /** Records the last {@link #unackedMessageBytes} read one by one, the rest taken from segment tallies; for tests. */
    long recordsReadCountingBytes() {
        return locked(() -> log.backlogBytes().recordsRead());
    }

    public long unackedMessages() {
        lock.lock();
        try {
            return acks.unackedCount();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Why this queue's storage failed (a force or a mapped write), or null: once set, appends are
     * refused and nothing more is confirmed until a restart.
     */
    public StorageFailedException failure() {
        return durability.failure();
    }

    /**
     * The {@link StorageFailedException} an append would throw now, naming the queue and the cause, or null: once this
     * queue's storage failed every append is refused. So that a caller refuses a message before it makes room for it
     * (a {@code drop-oldest} drop would otherwise discard a message for one that is never stored).
     */
    public StorageFailedException appendRefusal() {
        return appender.refusal();
    }

    /** Forces (fsyncs) of this queue's segments since the store was opened. */
    public long syncCount() {
        return durability.syncCount();
    }

    /** Total time spent in those forces, in nanoseconds. */
    public long syncNanos() {
        return durability.syncNanos();
    }

    /** Records found damaged and skipped since the store was opened. */
    public long corruptRecords() {
        return locked(corruptRecords::countLocked);
    }

    /** Bytes ({@link #unackedMessageBytes}'s unit) of the damaged records discarded unacknowledged since the open; any thread. */
    public long discardedMessageBytes() {
        return corruptRecords.discardedMessageBytes();
    }

    /** Segment numbers on disk, oldest first. */
    public List<Integer> segmentNumbers() {
        return locked(() -> new ArrayList<>(log.tallies().keySet()));
    }

    public Path segmentDirectory() {
        return segmentDirectory;
    }

    // ---------------------------------------------------------------- flusher thread

    /**
     * Called by the flusher: forces the ack journal when due and the segments the policy requires, and
     * reports durability. Returns true if it forced a segment.
     */
    boolean flush(long nowNanos) {
        if (closed) {
            return false;
        }
        AckJournalForces.Turn journal = ackForces.flush(nowNanos);
        if (journal == AckJournalForces.Turn.PERIODIC) {
            writtenPages.periodic();
        }
        return durability.flush(nowNanos) | journal == AckJournalForces.Turn.REQUESTED;
    }

    /** Called by the flusher: deletes fully acknowledged segments and relocates stragglers. */
    boolean reclaim(long nowNanos) {
        return !closed && reclaimer.reclaim(nowNanos);
    }

    /** Records in {@code segment}, for the read-ahead thread. */
    private long segmentMessages(int segment) {
        lock.lock();
        try {
            return log.messages(segment);
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- lifecycle

    /** {@code read} under the queue's lock: for the calls off the hot paths, which may allocate a lambda. */
    private <T> T locked(Supplier<T> read) {
        lock.lock();
        try {
            return read.get();
        } finally {
            lock.unlock();
        }
    }

    /** {@code change} under the queue's lock, refused once the queue is closed. */
    private <T> T lockedOpen(Supplier<T> change) {
        return locked(() -> {
            ensureOpen();
            return change.get();
        });
    }

    private void ensureOpen() {
        if (closed) {
            throw new StorageException("queue '" + name + "' is closed");
        }
    }

    /** True once the queue was closed (or deleted): nothing is written into its files any more. */
    public boolean isClosed() {
        return closed;
    }

    /** The flusher met an unexpected failure in this queue: it is failed, so nothing unforced is confirmed. */
    void failed(String what, Throwable cause) {
        durability.fail(what, cause);
    }

    /** Forces everything, checkpoints the ack state and closes the files. */
    void close() {
        producerCheckpoints.refuse();
        boolean checkpointed = false;
        lock.lock();
        try {
            if (closed) {
                return;
            }
            reclaimer.close();
            durability.close();
            ackForces.close();
            closed = true;
            readers.closeAll();
            log.close();
            ackLog.close(); // checkpoints, and releases the journal even if that checkpoint fails
            checkpointed = true;
        } catch (IOException e) {
            LOG.warn("Queue '{}': error while closing.", name, e);
        } finally {
            lock.unlock();
        }
        durability.notifyClosed();
        ackForces.closed(checkpointed);
    }
}
