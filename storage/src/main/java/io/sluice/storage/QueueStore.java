package io.sluice.storage;

import io.sluice.storage.ack.AckLog;
import io.sluice.storage.ack.AckResult;
import io.sluice.storage.ack.AckStateReader;
import io.sluice.storage.durability.SegmentSyncer;
import io.sluice.storage.readahead.ReadAhead;
import io.sluice.storage.reclaim.ReclaimDecision;
import io.sluice.storage.reclaim.ReclaimPolicy;
import io.sluice.storage.reclaim.SegmentState;
import io.sluice.storage.segment.FileReleaser;
import io.sluice.storage.segment.RecordCodec;
import io.sluice.storage.segment.SegmentClock;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.SegmentRollCycle;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.queue.ExcerptAppender;
import net.openhft.chronicle.queue.ExcerptTailer;
import net.openhft.chronicle.queue.RollCycle;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueStore;
import net.openhft.chronicle.wire.DocumentContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.PriorityQueue;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongConsumer;
import java.util.function.LongSupplier;

/**
 * One queue's storage: its segments (a Chronicle queue whose cycles are segments, see
 * {@link SegmentRollCycle}), its ack state ({@link AckLog}), durability bookkeeping and reclaim.
 *
 * <p>Threads: every public method is thread-safe. Appends, acks and reads by id serialise on one
 * lock, held only for the in-memory work and the store into the mapped file, never for a sync.
 * The store's flusher thread forces segments (group commit), reports durability and runs reclaim.
 *
 * <p>Ids are Chronicle indexes: {@code segment << 32 | sequence}. They increase with every append
 * and never repeat, but are not contiguous across segments.
 */
public final class QueueStore {
    private static final ByteBuffer NO_BYTES = ByteBuffer.allocate(0);
    /** The read-ahead thread leaves alone a reader this close to the tail (see ReaderReadAhead.nearTail). */
    static final int READ_AHEAD_MIN_LAG = 4096;
    private static final Logger LOG = LoggerFactory.getLogger(QueueStore.class);
    private static final long CHRONICLE_BLOCK_BYTES = 16L << 20;
    /** Bit of a Chronicle header word: the document or metadata after it is still being written. */
    private static final int CHRONICLE_NOT_COMPLETE = 0x8000_0000;

    private final String name;
    private final Path directory;
    private final Path segmentDirectory;
    private final StoreConfig config;
    private final DiskSpaceGuard diskGuard;
    private final LongSupplier clock;
    private final Runnable wakeFlusher;
    private final ReclaimPolicy reclaimPolicy;
    private final ReadAhead readAhead;
    private final FileReleaser releaser;

    private final ReentrantLock lock = new ReentrantLock();
    private final SegmentClock segmentClock;
    private final SingleChronicleQueue chronicle;
    private final ExcerptAppender appender;
    private final RecordCodec appendCodec = new RecordCodec();
    private final RecordCodec randomReadCodec = new RecordCodec();
    private ExcerptTailer randomTailer;
    private final AckLog ackLog;
    private final AckStateReader acks;
    /** Record bytes and message counts per segment on disk, oldest first. Guarded by lock. */
    private final TreeMap<Integer, SegmentTally> segments = new TreeMap<>();
    private final CopyOnWriteArrayList<QueueReader> readers = new CopyOnWriteArrayList<>();

    /** Segments sealed since the flusher last forced, which it must force too. Guarded by lock. */
    private final List<Integer> sealedUnforced = new ArrayList<>();
    private volatile long writtenIndex = -1;
    private volatile long durableIndex = -1;
    private volatile LongConsumer durabilityListener;
    private final PriorityQueue<PendingDurable> pendingFutures = new PriorityQueue<>();
    private long nextIntervalSyncNanos;
    private long nextJournalForceNanos;
    private final SegmentSyncer syncer;

    private long appendedMessages;
    private long reclaimedSegments;
    private long reclaimedBytes;
    private long relocatedMessages;
    private long corruptRecords;
    private volatile boolean reclaimWanted = true;
    private long lastReclaimNanos;
    private volatile boolean closed;

    private QueueStore(String name, Path directory, StoreConfig config, DiskSpaceGuard diskGuard, LongSupplier clock,
                       Runnable wakeFlusher, ReadAhead readAhead, FileReleaser releaser) {
        this.readAhead = readAhead;
        this.releaser = releaser;
        this.name = name;
        this.directory = directory;
        this.segmentDirectory = directory.resolve("segments");
        this.syncer = new SegmentSyncer(segmentDirectory, releaser);
        this.config = config;
        this.diskGuard = diskGuard;
        this.clock = clock;
        this.wakeFlusher = wakeFlusher;
        this.reclaimPolicy = new ReclaimPolicy(config.relocateMaxLiveRatio(), config.relocateMaxLiveMessages(),
                config.relocateAfterMs() * 1_000_000L);
        long started = System.nanoTime();
        try {
            Files.createDirectories(segmentDirectory);
            finishInterruptedDeletes();
            discardUninitialisedLastSegment();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare the segment directory " + segmentDirectory, e);
        }
        int lastSegment = lastSegmentOnDisk();
        this.segmentClock = new SegmentClock(Math.max(lastSegment, 0));
        this.chronicle = SingleChronicleQueueBuilder.single(segmentDirectory.toFile())
                .rollCycle(SegmentRollCycle.INSTANCE)
                .timeProvider(segmentClock)
                .blockSize(Math.min(CHRONICLE_BLOCK_BYTES, config.segmentBytes()))
                .checkInterrupts(false)
                .build();
        this.appender = chronicle.createAppender();
        appender.singleThreadedCheckDisabled(true);
        this.ackLog = io(() -> AckLog.open(directory.resolve("acks"), config.ackJournalBytes()));
        this.acks = ackLog.state();
        recover(lastSegment);
        LOG.info("Queue '{}' opened in {} ms: {} segments, {} unacknowledged messages, next append to segment {}.",
                name, (System.nanoTime() - started) / 1_000_000, segments.size(), acks.unackedCount(), segmentClock.segment());
    }

    static QueueStore open(String name, Path directory, StoreConfig config, DiskSpaceGuard diskGuard, LongSupplier clock,
                           Runnable wakeFlusher, ReadAhead readAhead, FileReleaser releaser) {
        return new QueueStore(name, directory, config, diskGuard, clock, wakeFlusher, readAhead, releaser);
    }

    public String name() {
        return name;
    }

    public Path directory() {
        return directory;
    }

    public DurabilityMode durability() {
        return config.durability();
    }

    RollCycle rollCycle() {
        return SegmentRollCycle.INSTANCE;
    }

    // ---------------------------------------------------------------- recovery

    /**
     * Rebuilds the in-memory state without reading the backlog: message counts per segment come from
     * Chronicle's index, ack state from the checkpoint plus journal. Only the last segment, the one
     * that may hold an unsynced tail, is scanned and its checksums verified.
     */
    private void recover(int lastSegment) {
        if (lastSegment < 0) {
            io(() -> ackLog.recover());
            skipReclaimedSegments(lastSegment);
            return;
        }
        NavigableSet<Long> cycles = chronicle.listCyclesBetween(chronicle.firstCycle(), chronicle.lastCycle());
        try (ExcerptTailer counter = chronicle.createTailer()) {
            for (long cycleLong : cycles) {
                int cycle = (int) cycleLong;
                long count = counter.excerptsInCycle(cycle);
                long bytes = fileBytes(cycle);
                segments.put(cycle, new SegmentTally(count, bytes));
                if (count > 0) {
                    ackLog.segmentGrew(cycle, count);
                }
            }
        }
        io(() -> ackLog.recover());
        // Segments the ack state says were reclaimed, but whose file survived a crash mid-delete.
        for (Integer segment : new ArrayList<>(segments.keySet())) {
            if (segment < segmentClock.segment() && segments.get(segment).messages > 0 && acks.unackedCount(segment) == 0) {
                reclaimWanted = true;
            }
        }
        verifyTail(lastSegment);
        long last = chronicle.lastIndex();
        writtenIndex = last;
        durableIndex = last;
        SegmentTally tail = segments.get(lastSegment);
        if (tail != null && tail.bytes >= config.segmentBytes()) {
            segmentClock.advance();
        }
        skipReclaimedSegments(lastSegment);
    }

    /**
     * Rule "ids are never reused": if the ack state knows segments newer than the newest file (they
     * were written, fully acknowledged and deleted before the crash), appends continue after them.
     */
    private void skipReclaimedSegments(int lastSegmentOnDisk) {
        int highestKnown = acks.highestKnownSegment();
        if (highestKnown > lastSegmentOnDisk && highestKnown >= segmentClock.segment()) {
            LOG.info("Queue '{}': segments up to {} were reclaimed before the restart; appends continue at segment {}.",
                    name, highestKnown, highestKnown + 1);
            segmentClock.moveTo(highestKnown + 1);
        }
    }

    private void verifyTail(int segment) {
        long started = System.nanoTime();
        long checked = 0;
        long bad = 0;
        RecordCodec codec = new RecordCodec();
        try (ExcerptTailer tailer = chronicle.createTailer()) {
            if (!tailer.moveToCycle(segment)) {
                return;
            }
            while (true) {
                long index;
                String problem;
                try (DocumentContext dc = tailer.readingDocument()) {
                    if (!dc.isPresent()) {
                        break;
                    }
                    index = dc.index();
                    if (SegmentRollCycle.INSTANCE.toCycle(index) != segment) {
                        break;
                    }
                    Bytes<?> bytes = dc.wire().bytes();
                    int length = (int) bytes.readRemaining();
                    bytes.read(codec.arrayFor(length), 0, length);
                    problem = codec.loaded(length);
                }
                checked++;
                if (problem != null && !acks.isAcked(index)) {
                    bad++;
                    discardCorruptLocked(index, problem);
                } else if (problem == null && codec.relocated() && !acks.isAcked(index)
                        && acks.physicalId(codec.originalId()) != index) {
                    // A relocated copy written just before a crash, whose relocation never reached the
                    // journal: the original is still the live one, so the copy is discarded.
                    LOG.warn("Queue '{}': discarding an unjournaled relocated copy of message 0x{} at 0x{}.",
                            name, Long.toHexString(codec.originalId()), Long.toHexString(index));
                    io(() -> ackLog.ack(index));
                }
            }
        }
        LOG.info("Queue '{}': verified the {} records of the last segment {} in {} ms; {} damaged.",
                name, checked, SegmentFiles.fileName(segment), (System.nanoTime() - started) / 1_000_000, bad);
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
        ByteBuffer header = ByteBuffer.allocate(4).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            channel.read(header, 0);
        }
        int word = header.hasRemaining() ? 0 : header.getInt(0);
        if (word == 0 || (word & CHRONICLE_NOT_COMPLETE) != 0) {
            LOG.warn("Queue '{}': segment {} was being created when the process stopped (its header is incomplete, so it holds "
                    + "no message); deleting it.", name, file.getFileName());
            Files.delete(file);
        }
    }

    /** Bytes written to a segment file (Chronicle's write position: records plus its index). */
    private long fileBytes(int segment) {
        SingleChronicleQueueStore store = chronicle.storeForCycle(segment, chronicle.epoch(), false, null);
        if (store == null) {
            return 0;
        }
        try {
            return store.writePosition();
        } finally {
            chronicle.closeStore(store);
        }
    }

    // ---------------------------------------------------------------- append

    /** Appends a message with empty producer identity. See {@link #append(long, long, ByteBuffer, ByteBuffer)}. */
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
        return append(producerId, producerSequence, h, h.position(), h.remaining(), p, p.position(), p.remaining());
    }

    /**
     * Appends one message whose encoded headers and payload are regions of {@code source} (absolute
     * offsets; the buffer's position is neither used nor moved): a broker holding a whole PUBLISH frame
     * in one buffer stores each of its messages without creating a slice per message. Otherwise as
     * {@link #append(long, long, ByteBuffer, ByteBuffer)}.
     */
    public long append(long producerId, long producerSequence, ByteBuffer source, int headersOffset, int headersLength,
                       int payloadOffset, int payloadLength) {
        return append(producerId, producerSequence, source, headersOffset, headersLength, source, payloadOffset, payloadLength);
    }

    private long append(long producerId, long producerSequence, ByteBuffer headers, int headersOffset, int headersLength,
                        ByteBuffer payload, int payloadOffset, int payloadLength) {
        int size = headersLength + payloadLength;
        if (size > config.maxMessageBytes()) {
            throw new MessageTooLargeException("message of " + size + " bytes (headers plus payload) for queue '" + name
                    + "' exceeds maxMessageBytes " + config.maxMessageBytes());
        }
        long index;
        lock.lock();
        try {
            ensureOpen();
            diskGuard.reserve(size + RecordCodec.HEADER_BYTES + 8L);
            appendCodec.encodeParts(0, -1, 0, producerId, producerSequence, clock.getAsLong(),
                    headers, headersOffset, headersLength, payload, payloadOffset, payloadLength);
            index = writeRecordLocked(appendCodec);
            appendedMessages++;
        } finally {
            lock.unlock();
        }
        if (config.durability() == DurabilityMode.ALWAYS) {
            // Only `always` waits for the flusher: it starts the next group commit now. In the other modes
            // it has nothing to do per append (`interval` syncs on its own clock), and waking it parked,
            // a futex syscall, was 32 % of an append under `never` (async-profiler on the JMH append).
            wakeFlusher.run();
        }
        return index;
    }

    private long writeRecordLocked(RecordCodec codec) {
        int length = codec.length();
        SegmentTally current = segments.get(segmentClock.segment());
        if (current != null && current.messages > 0 && current.bytes + length > config.segmentBytes()) {
            current.sealedAtNanos = System.nanoTime();
            sealedUnforced.add(segmentClock.segment());
            segmentClock.advance();
            reclaimWanted = true;
        }
        DocumentContext dc = appender.writingDocument();
        try {
            dc.wire().bytes().write(codec.array(), 0, length);
        } catch (RuntimeException | Error e) {
            dc.rollbackOnClose();
            throw new StorageException("append to queue '" + name + "' failed; nothing was written", e);
        } finally {
            dc.close();
        }
        long index = appender.lastIndexAppended();
        int segment = SegmentRollCycle.INSTANCE.toCycle(index);
        long count = SegmentRollCycle.INSTANCE.toSequenceNumber(index) + 1;
        SegmentTally tally = segments.computeIfAbsent(segment, s -> new SegmentTally(0, 0));
        tally.messages = count;
        tally.bytes += length + 4;
        ackLog.segmentGrew(segment, count);
        writtenIndex = index;
        if (config.durability() != DurabilityMode.ALWAYS) {
            durableIndex = index;
        }
        return index;
    }

    /** The highest id that is durable under the store's policy; every id at or below it is too. */
    /** The store's clock (epoch ms): the time base of {@link StoredMessage#timestampMillis()}. */
    public long nowMillis() {
        return clock.getAsLong();
    }

    public long durableIndex() {
        return durableIndex;
    }

    /** The highest id appended. */
    public long writtenIndex() {
        return writtenIndex;
    }

    /**
     * Sets the callback told, on the flusher thread, each time the durable index advances (with the
     * new value). Only {@link DurabilityMode#ALWAYS} defers durability; in the other modes an id is
     * durable as soon as {@code append} returns.
     */
    public void durabilityListener(LongConsumer listener) {
        this.durabilityListener = listener;
    }

    /** A future completed (with the id) once {@code id} is durable. */
    public CompletableFuture<Long> whenDurable(long id) {
        if (durableIndex >= id) {
            return CompletableFuture.completedFuture(id);
        }
        CompletableFuture<Long> future = new CompletableFuture<>();
        synchronized (pendingFutures) {
            pendingFutures.add(new PendingDurable(id, future));
        }
        wakeFlusher.run();
        if (durableIndex >= id) {
            completePendingFutures(durableIndex);
        }
        return future;
    }

    // ---------------------------------------------------------------- acks

    /** Acknowledges one message. Ids of messages already acknowledged (or reclaimed) are ALREADY_ACKED. */
    public AckResult ack(long id) {
        lock.lock();
        try {
            ensureOpen();
            long physical = acks.physicalId(id);
            AckResult result = io(() -> ackLog.ack(id));
            if (result == AckResult.NEWLY_ACKED) {
                noteAcked(physical);
            }
            return result;
        } finally {
            lock.unlock();
        }
    }

    /** Acknowledges every stored message with an id in {@code [fromId, toIdInclusive]}; returns how many were newly acknowledged. */
    public long ackRange(long fromId, long toIdInclusive) {
        lock.lock();
        try {
            ensureOpen();
            long newly = io(() -> ackLog.ackRange(fromId, toIdInclusive));
            if (newly > 0) {
                reclaimWanted = true;
            }
            return newly;
        } finally {
            lock.unlock();
        }
    }

    private void noteAcked(long physicalId) {
        int segment = SegmentRollCycle.INSTANCE.toCycle(physicalId);
        if (segment < segmentClock.segment() && acks.unackedCount(segment) == 0) {
            reclaimWanted = true;
        }
    }

    /** Records that the broker delivered {@code id} for the {@code count}-th time; persisted with the ack state. */
    public void recordDelivery(long id, int count) {
        lock.lock();
        try {
            ensureOpen();
            io(() -> ackLog.recordDelivery(id, count));
        } finally {
            lock.unlock();
        }
    }

    /**
     * Records {@code count} deliveries at once, under one lock: {@code ids[i]} delivered for the
     * {@code counts[i]}-th time (see {@link #recordDelivery}).
     */
    public void recordDeliveries(long[] ids, int[] counts, int count) {
        lock.lock();
        try {
            ensureOpen();
            ackLog.recordDeliveries(ids, counts, count);
        } catch (IOException e) {
            throw new UncheckedIOException("ack state of queue '" + name + "' failed: " + e.getMessage(), e);
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
        List<Long> ids = new ArrayList<>();
        lock.lock();
        try {
            for (long p = acks.firstUnackedId(); p >= 0; p = acks.nextUnackedId(p + 1)) {
                ids.add(acks.originalId(p));
            }
        } finally {
            lock.unlock();
        }
        ids.forEach(visitor::accept);
    }

    /**
     * The id of the oldest unacknowledged message at or after {@code fromId} in store order (its
     * original id if relocated), or -1. For policies that discard the oldest messages.
     */
    public long nextUnacked(long fromId) {
        lock.lock();
        try {
            long physical = acks.nextUnackedId(Math.max(0, fromId));
            return physical < 0 ? -1 : acks.originalId(physical);
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
            ExcerptTailer tailer = chronicle.createTailer();
            tailer.singleThreadedCheckDisabled(true);
            long first = acks.firstUnackedId();
            int segment;
            if (first >= 0 && tailer.moveToIndex(first)) {
                segment = SegmentRollCycle.INSTANCE.toCycle(first);
            } else if (first >= 0) {
                tailer.toStart();
                segment = Math.max(0, chronicle.firstCycle());
            } else {
                tailer.toEnd();
                segment = segmentClock.segment();
            }
            QueueReader reader = new QueueReader(this, tailer, segment);
            readers.add(reader);
            if (readAhead != null && config.readAheadMessages() > 0) {
                readAhead.register(reader, new ReaderReadAhead(reader, first >= 0 ? first : chronicle.lastIndex() + 1));
            }
            return reader;
        } finally {
            lock.unlock();
        }
    }

    void readerClosed(QueueReader reader) {
        readers.remove(reader);
        if (readAhead != null) {
            readAhead.unregister(reader);
        }
        reclaimWanted = true;
    }

    /**
     * Reads one message by id, for redelivery. Returns a detached copy, or null if the message is
     * acknowledged or was never stored.
     *
     * @throws CorruptRecordException if the record fails its checksum
     */
    public StoredMessage read(long id) {
        lock.lock();
        try {
            ensureOpen();
            long physical = acks.physicalId(id);
            if (acks.isAcked(physical)) {
                return null;
            }
            if (randomTailer == null) {
                randomTailer = chronicle.createTailer();
                randomTailer.singleThreadedCheckDisabled(true);
            }
            if (!randomTailer.moveToIndex(physical)) {
                return null;
            }
            int length;
            try (DocumentContext dc = randomTailer.readingDocument()) {
                if (!dc.isPresent() || dc.index() != physical) {
                    return null;
                }
                Bytes<?> bytes = dc.wire().bytes();
                length = (int) bytes.readRemaining();
                bytes.read(randomReadCodec.arrayFor(length), 0, length);
            }
            String problem = randomReadCodec.loaded(length);
            if (problem != null) {
                throw corrupt(physical, problem);
            }
            StoredMessage message = new StoredMessage();
            fillLocked(message, randomReadCodec, physical);
            return message.copy();
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
            if (!reader.copiesToSkip.isEmpty() && reader.copiesToSkip.remove(physical)) {
                return false;
            }
            if (acks.isAcked(physical)) {
                return false;
            }
            if (problem != null) {
                discardCorruptLocked(physical, problem);
                return false;
            }
            fillLocked(message, codec, physical);
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Acknowledges {@code count} ids from {@code ids} under one lock; returns how many were newly acknowledged. */
    public int ackAll(long[] ids, int count) {
        int newly = 0;
        lock.lock();
        try {
            ensureOpen();
            newly = ackLog.ackAll(ids, count, this::noteAcked);
        } catch (IOException e) {
            throw new UncheckedIOException("ack state of queue '" + name + "' failed: " + e.getMessage(), e);
        } finally {
            lock.unlock();
        }
        return newly;
    }

    private void fillLocked(StoredMessage message, RecordCodec codec, long physical) {
        message.physicalId = physical;
        message.relocated = codec.relocated();
        message.id = message.relocated ? codec.originalId() : physical;
        message.deliveryCount = Math.max(acks.deliveryCount(message.id), codec.deliveryCount());
        message.producerId = codec.producerId();
        message.producerSequence = codec.producerSequence();
        message.timestampMillis = codec.timestampMillis();
        message.array = codec.array();
        message.headersOffset = codec.headersOffset();
        message.headersLength = codec.headersLength();
        message.payloadOffset = codec.payloadOffset();
        message.payloadLength = codec.payloadLength();
    }

    private void discardCorruptLocked(long index, String problem) {
        CorruptRecordException e = corrupt(index, problem);
        LOG.error("Queue '{}': {}. The record is skipped and will never be delivered.", name, e.getMessage());
        corruptRecords++;
        if (!acks.isAcked(index)) {
            io(() -> ackLog.ack(index));
        }
    }

    private CorruptRecordException corrupt(long index, String problem) {
        int segment = SegmentRollCycle.INSTANCE.toCycle(index);
        return new CorruptRecordException(SegmentFiles.file(segmentDirectory, segment), index, -1, problem);
    }

    // ---------------------------------------------------------------- figures

    /** The queue's backlog figures; O(segments), no I/O. */
    public BacklogStats stats() {
        lock.lock();
        try {
            long unackedBytes = 0;
            long diskBytes = 0;
            long pinnedBytes = 0;
            long firstUnacked = acks.firstUnackedId();
            int pinSegment = firstUnacked < 0 ? -1 : SegmentRollCycle.INSTANCE.toCycle(firstUnacked);
            for (Map.Entry<Integer, SegmentTally> e : segments.entrySet()) {
                SegmentTally t = e.getValue();
                diskBytes += t.bytes;
                if (t.messages > 0) {
                    long unacked = acks.unackedCount(e.getKey());
                    unackedBytes += unacked == t.messages ? t.bytes : (long) ((double) t.bytes * unacked / t.messages);
                }
                if (e.getKey() <= pinSegment) {
                    pinnedBytes += t.bytes;
                }
            }
            return new BacklogStats(acks.unackedCount(), unackedBytes, diskBytes, segments.size(), pinnedBytes,
                    appendedMessages, reclaimedSegments, reclaimedBytes, relocatedMessages);
        } finally {
            lock.unlock();
        }
    }

    public long unackedMessages() {
        lock.lock();
        try {
            return acks.unackedCount();
        } finally {
            lock.unlock();
        }
    }

    /** Forces (fsyncs) of this queue's segments since the store was opened. */
    public long syncCount() {
        return syncer.syncs();
    }

    /** Total time spent in those forces, in nanoseconds. */
    public long syncNanos() {
        return syncer.syncNanos();
    }

    /** Records found damaged and skipped since the store was opened. */
    public long corruptRecords() {
        lock.lock();
        try {
            return corruptRecords;
        } finally {
            lock.unlock();
        }
    }

    /** Segment numbers on disk, oldest first. */
    public List<Integer> segmentNumbers() {
        lock.lock();
        try {
            return new ArrayList<>(segments.keySet());
        } finally {
            lock.unlock();
        }
    }

    public Path segmentDirectory() {
        return segmentDirectory;
    }

    // ---------------------------------------------------------------- flusher thread

    /**
     * Called by the flusher: forces what the policy requires and reports durability. Returns true if
     * it did any work.
     */
    boolean flush(long nowNanos) {
        if (closed) {
            return false;
        }
        boolean worked = false;
        if (nowNanos - nextJournalForceNanos >= 0) {
            nextJournalForceNanos = nowNanos + config.syncIntervalMs() * 1_000_000L;
            lock.lock();
            try {
                if (!closed) {
                    io(() -> ackLog.force());
                }
            } finally {
                lock.unlock();
            }
        }
        switch (config.durability()) {
            case ALWAYS -> {
                long target = writtenIndex;
                if (target > durableIndex) {
                    forceThrough(target);
                    durableIndex = target;
                    notifyDurable(target);
                    worked = true;
                } else if (!pendingFuturesEmpty()) {
                    completePendingFutures(durableIndex);
                }
            }
            case INTERVAL -> {
                if (nowNanos - nextIntervalSyncNanos >= 0) {
                    nextIntervalSyncNanos = nowNanos + config.syncIntervalMs() * 1_000_000L;
                    long target = writtenIndex;
                    if (target >= 0) {
                        forceThrough(target);
                    }
                }
                completePendingFutures(durableIndex);
            }
            case NEVER -> completePendingFutures(durableIndex);
            default -> throw new IllegalStateException("unknown durability " + config.durability());
        }
        return worked;
    }

    /** Forces the segments holding everything up to {@code target}: any sealed since the last force, then the target's. */
    private void forceThrough(long target) {
        List<Integer> sealed;
        lock.lock();
        try {
            sealed = new ArrayList<>(sealedUnforced);
            sealedUnforced.clear();
        } finally {
            lock.unlock();
        }
        try {
            syncer.force(sealed, SegmentRollCycle.INSTANCE.toCycle(target));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot force segments of queue '" + name + "' to disk", e);
        }
    }

    private void notifyDurable(long target) {
        LongConsumer listener = durabilityListener;
        if (listener != null) {
            try {
                listener.accept(target);
            } catch (RuntimeException e) {
                LOG.error("Queue '{}': the durability listener failed.", name, e);
            }
        }
        completePendingFutures(target);
    }

    private boolean pendingFuturesEmpty() {
        synchronized (pendingFutures) {
            return pendingFutures.isEmpty();
        }
    }

    private void completePendingFutures(long durable) {
        List<PendingDurable> ready = new ArrayList<>();
        synchronized (pendingFutures) {
            while (!pendingFutures.isEmpty() && pendingFutures.peek().id <= durable) {
                ready.add(pendingFutures.poll());
            }
        }
        for (PendingDurable p : ready) {
            p.future.complete(p.id);
        }
    }

    /** Called by the flusher: deletes fully acknowledged segments and relocates stragglers. */
    boolean reclaim(long nowNanos) {
        // Rule "reclaim is never forgotten": besides the events that ask for it (a roll, a segment
        // fully acknowledged, a reader closed), a pass runs every 100 ms, which also catches segments
        // that acks brought down to a few stragglers.
        boolean due = nowNanos - lastReclaimNanos > 100_000_000L;
        if ((!reclaimWanted && !due) || closed) {
            return false;
        }
        lastReclaimNanos = nowNanos;
        reclaimWanted = false;
        List<Path> toDelete = new ArrayList<>();
        lock.lock();
        try {
            if (closed) {
                return false;
            }
            List<ReclaimDecision> decisions = reclaimPolicy.decide(segmentStatesLocked(nowNanos), segmentClock.segment(), oldestReaderSegment());
            for (ReclaimDecision d : decisions) {
                if (d.action() == ReclaimDecision.Action.RELOCATE) {
                    relocateLocked(d.segment());
                }
                if (acks.unackedCount(d.segment()) == 0) {
                    Path deleting = markDeletedLocked(d.segment());
                    if (deleting != null) {
                        toDelete.add(deleting);
                    }
                }
            }
            if (!toDelete.isEmpty()) {
                chronicle.refreshDirectoryListing();
            }
        } finally {
            lock.unlock();
        }
        toDelete.forEach(releaser::delete);
        return !toDelete.isEmpty();
    }

    private List<SegmentState> segmentStatesLocked(long nowNanos) {
        List<SegmentState> states = new ArrayList<>(segments.size());
        int writeSegment = segmentClock.segment();
        for (Map.Entry<Integer, SegmentTally> e : segments.entrySet()) {
            SegmentTally t = e.getValue();
            long sealedFor = e.getKey() >= writeSegment ? 0
                    : t.sealedAtNanos == SegmentTally.SEALED_BEFORE_OPEN ? Long.MAX_VALUE
                    : nowNanos - t.sealedAtNanos;
            states.add(new SegmentState(e.getKey(), t.messages, t.messages == 0 ? 0 : acks.unackedCount(e.getKey()), t.bytes,
                    sealedFor));
        }
        return states;
    }

    private int oldestReaderSegment() {
        int oldest = Integer.MAX_VALUE;
        for (QueueReader r : readers) {
            oldest = Math.min(oldest, r.segment);
        }
        return oldest;
    }

    /** Copies the unacknowledged messages of {@code segment} forward, keeping their id and delivery count. */
    private void relocateLocked(int segment) {
        long first = SegmentRollCycle.INSTANCE.toIndex(segment, 0);
        long end = SegmentRollCycle.INSTANCE.toIndex(segment + 1, 0);
        List<Long> stragglers = new ArrayList<>();
        for (long p = acks.nextUnackedId(first); p >= 0 && p < end; p = acks.nextUnackedId(p + 1)) {
            stragglers.add(p);
        }
        RecordCodec codec = new RecordCodec();
        for (long physical : stragglers) {
            if (randomTailer == null) {
                randomTailer = chronicle.createTailer();
                randomTailer.singleThreadedCheckDisabled(true);
            }
            if (!randomTailer.moveToIndex(physical)) {
                continue;
            }
            int length;
            try (DocumentContext dc = randomTailer.readingDocument()) {
                if (!dc.isPresent()) {
                    continue;
                }
                Bytes<?> bytes = dc.wire().bytes();
                length = (int) bytes.readRemaining();
                bytes.read(randomReadCodec.arrayFor(length), 0, length);
            }
            String problem = randomReadCodec.loaded(length);
            if (problem != null) {
                discardCorruptLocked(physical, problem);
                continue;
            }
            long originalId = randomReadCodec.relocated() ? randomReadCodec.originalId() : physical;
            int deliveries = Math.max(acks.deliveryCount(originalId), randomReadCodec.deliveryCount());
            codec.encode(RecordCodec.FLAG_RELOCATED, originalId, deliveries, randomReadCodec.producerId(),
                    randomReadCodec.producerSequence(), randomReadCodec.timestampMillis(),
                    ByteBuffer.wrap(randomReadCodec.array(), randomReadCodec.headersOffset(), randomReadCodec.headersLength()),
                    ByteBuffer.wrap(randomReadCodec.array(), randomReadCodec.payloadOffset(), randomReadCodec.payloadLength()));
            long newId = writeRecordLocked(codec);
            io(() -> ackLog.relocate(originalId, newId));
            relocatedMessages++;
            for (QueueReader reader : readers) {
                // A reader past this segment has processed every record in it (its segment moves only
                // once the record before is done), the straggler among them, unacked then as now.
                if (reader.segment > segment) {
                    reader.copiesToSkip.add(newId);
                }
            }
        }
        // The random tailer may still map the old segment; drop it so the file can be unmapped.
        if (randomTailer != null) {
            randomTailer.close();
            randomTailer = null;
        }
        if (!stragglers.isEmpty()) {
            LOG.info("Queue '{}': moved {} unacknowledged messages forward out of segment {} so it can be reclaimed.",
                    name, stragglers.size(), SegmentFiles.fileName(segment));
            wakeFlusher.run();
        }
    }

    private Path markDeletedLocked(int segment) {
        SegmentTally tally = segments.remove(segment);
        if (tally == null) {
            return null;
        }
        if (randomTailer != null) {
            randomTailer.close();
            randomTailer = null;
        }
        io(() -> ackLog.segmentReclaimed(segment));
        reclaimedSegments++;
        reclaimedBytes += tally.bytes;
        Path file = SegmentFiles.file(segmentDirectory, segment);
        Path deleting = segmentDirectory.resolve(SegmentFiles.fileName(segment).replace(SegmentFiles.SUFFIX, SegmentFiles.DELETING_SUFFIX));
        try {
            Files.move(file, deleting, StandardCopyOption.ATOMIC_MOVE);
            return deleting;
        } catch (NoSuchFileException gone) {
            return null;
        } catch (IOException e) {
            LOG.warn("Queue '{}': could not rename {} for deletion.", name, file, e);
            return null;
        }
    }

    // ---------------------------------------------------------------- lifecycle

    private void ensureOpen() {
        if (closed) {
            throw new StorageException("queue '" + name + "' is closed");
        }
    }

    boolean isClosed() {
        return closed;
    }

    /** Forces everything, checkpoints the ack state and closes the files. */
    void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            long target = writtenIndex;
            if (target >= 0 && config.durability() != DurabilityMode.NEVER) {
                forceThroughQuietly(target);
            }
            durableIndex = target;
            closed = true;
            for (QueueReader r : readers) {
                r.close();
            }
            if (randomTailer != null) {
                randomTailer.close();
            }
            appender.close();
            chronicle.close();
            io(() -> ackLog.checkpoint());
            io(() -> ackLog.close());
            syncer.close();
        } catch (IOException e) {
            LOG.warn("Queue '{}': error while closing.", name, e);
        } finally {
            lock.unlock();
        }
        notifyDurable(durableIndex);
    }

    private void forceThroughQuietly(long target) {
        try {
            forceThrough(target);
        } catch (UncheckedIOException e) {
            LOG.warn("Queue '{}': final force failed.", name, e);
        }
    }

    /** An I/O step of the ack state; a failure there means the queue's storage has failed. */
    private interface IoStep<T> {
        T run() throws IOException;
    }

    private interface IoAction {
        void run() throws IOException;
    }

    private <T> T io(IoStep<T> step) {
        try {
            return step.run();
        } catch (IOException e) {
            throw new UncheckedIOException("ack state of queue '" + name + "' failed: " + e.getMessage(), e);
        }
    }

    private void io(IoAction action) {
        try {
            action.run();
        } catch (IOException e) {
            throw new UncheckedIOException("ack state of queue '" + name + "' failed: " + e.getMessage(), e);
        }
    }

    /**
     * Follows one reader for the read-ahead thread: touches its coming records, at most
     * {@code readAheadMessages} ahead of it. Used only on the read-ahead thread.
     */
    private final class ReaderReadAhead implements ReadAhead.Cursor {
        private final QueueReader reader;
        private final long startIndex;
        private ExcerptTailer tailer;
        /** Index of the last record touched, or -1. */
        private long touched = -1;
        private long sink;

        ReaderReadAhead(QueueReader reader, long startIndex) {
            this.reader = reader;
            this.startIndex = startIndex;
        }

        @Override
        public int advance(int limit) {
            if (closed) {
                return 0;
            }
            long readerAt = reader.nextIndex >= 0 ? reader.nextIndex : startIndex;
            if (nearTail(readerAt)) {
                return 0;
            }
            if (tailer == null || touched < readerAt - 1) {
                if (tailer == null) {
                    tailer = chronicle.createTailer();
                }
                if (!tailer.moveToIndex(readerAt)) {
                    return 0; // nothing stored there yet (the reader is at the tail), or it was reclaimed
                }
                touched = readerAt - 1;
            }
            int budget = config.readAheadMessages();
            int done = 0;
            while (done < limit && ahead(readerAt) < budget) {
                try (DocumentContext dc = tailer.readingDocument()) {
                    if (!dc.isPresent()) {
                        break;
                    }
                    Bytes<?> bytes = dc.wire().bytes();
                    if (bytes.readRemaining() > 0) {
                        sink += bytes.readByte(bytes.readLimit() - 1); // faults the record's last page in
                    }
                    touched = dc.index();
                }
                done++;
                reader.readAheadIndex = touched;
            }
            return done;
        }

        /**
         * A reader fewer than {@link #READ_AHEAD_MIN_LAG} records behind the tail of the segment being
         * written reads what was just appended, which is resident: touching it would only repeat the
         * reader's work (under W1 that repetition was 4.7 % of the broker's CPU and a wake-up a millisecond).
         */
        private boolean nearTail(long readerAt) {
            long tail = writtenIndex;
            if (tail < 0 || readerAt < 0) {
                return true;
            }
            int tailSegment = SegmentRollCycle.INSTANCE.toCycle(tail);
            return SegmentRollCycle.INSTANCE.toCycle(readerAt) == tailSegment
                    && SegmentRollCycle.INSTANCE.toSequenceNumber(tail) - SegmentRollCycle.INSTANCE.toSequenceNumber(readerAt)
                    < READ_AHEAD_MIN_LAG;
        }

        /** Records touched beyond the reader, counted within segments (indexes jump between them). */
        private long ahead(long readerAt) {
            if (touched < readerAt) {
                return 0;
            }
            int readerSegment = SegmentRollCycle.INSTANCE.toCycle(readerAt);
            int touchedSegment = SegmentRollCycle.INSTANCE.toCycle(touched);
            long touchedSeq = SegmentRollCycle.INSTANCE.toSequenceNumber(touched);
            if (readerSegment == touchedSegment) {
                return touchedSeq - SegmentRollCycle.INSTANCE.toSequenceNumber(readerAt) + 1;
            }
            return touchedSeq + 1 + Math.max(0, segmentSize(readerSegment) - SegmentRollCycle.INSTANCE.toSequenceNumber(readerAt));
        }

        @Override
        public void release() {
            if (tailer != null) {
                tailer.close();
                tailer = null;
            }
            if (sink == 42) {
                LOG.trace("read-ahead checksum {}", sink); // keeps the touching reads from being optimised away
            }
        }
    }

    private long segmentSize(int segment) {
        lock.lock();
        try {
            SegmentTally t = segments.get(segment);
            return t == null ? 0 : t.messages;
        } finally {
            lock.unlock();
        }
    }

    private static final class SegmentTally {
        /** {@link #sealedAtNanos} of a segment sealed before the store was opened (or not sealed yet). */
        static final long SEALED_BEFORE_OPEN = Long.MIN_VALUE;
        long messages;
        long bytes;
        /** When this process sealed the segment (System.nanoTime), for reclaim's rule R3. */
        long sealedAtNanos = SEALED_BEFORE_OPEN;

        SegmentTally(long messages, long bytes) {
            this.messages = messages;
            this.bytes = bytes;
        }
    }

    private record PendingDurable(long id, CompletableFuture<Long> future) implements Comparable<PendingDurable> {
        @Override
        public int compareTo(PendingDurable o) {
            return Long.compare(id, o.id);
        }
    }
}
