package io.sluice.storage.reclaim;

import io.sluice.storage.DiskSpaceGuard;
import io.sluice.storage.StorageFilesExhaustedException;
import io.sluice.storage.StorageFullException;
import io.sluice.storage.ack.AckLog;
import io.sluice.storage.ack.AckStateReader;
import io.sluice.storage.segment.FileReleaser;
import io.sluice.storage.segment.RecordCodec;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.SegmentLog;
import io.sluice.storage.segment.SegmentRollCycle;
import io.sluice.storage.segment.SegmentTally;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/**
 * Carries out {@link ReclaimPolicy}'s decisions for one queue: deletes fully acknowledged segments and
 * relocates the stragglers of nearly acknowledged ones, so that they can be deleted too.
 *
 * <p>Rule R4, "a source leaves only after its copies are safe" (docs/storage.md): a segment whose
 * stragglers were copied forward is deleted only once the segments holding the copies are forced and
 * the ack journal is forced past the copies' RELOCATED records. Before that, a machine crash could
 * leave the source gone and the relocation unrecorded, and recovery would take the copy for an
 * unjournaled duplicate: a confirmed message lost. And rule R5: before any copy is written, the
 * intent ({@link RelocationIntent}) is durable, so that recovery can find every copy the journal may
 * not know of without scanning the backlog. A pass:
 * <ol>
 *   <li>under the lock: decide; delete what is fully acknowledged and needs no copy; note the
 *       written index if something must be relocated;</li>
 *   <li>without the lock: write the intent (after that index) durably, unless an earlier pass's is still there;</li>
 *   <li>under the lock: copy the stragglers (a copy that the ack state does not name as its message's
 *       holder is resolved first, {@link RelocatedCopies});</li>
 *   <li>without the lock: force the segments holding every copy not yet forced, then the ack journal;</li>
 *   <li>under the lock: delete the relocated segments; then clear the intent.</li>
 * </ol>
 * Rule "a source waits for its copies' forces": a force refused for want of file descriptors stops the
 * pass after step 3, with the copies journaled and their sources reading as fully acknowledged; those
 * sources stay in {@link #awaitingForces} and no pass deletes them until one has done steps 4 and 5 for
 * them (each pass tries again). A failed force fails the queue, as does a failed write of the ack state (a
 * rotation's checkpoint), and rule "a failed queue moves no message" holds from then on: no pass relocates,
 * and the sources awaiting forces stay for good (the intent too, for recovery), since a force tried again
 * would succeed without the data on disk.
 *
 * <p>Threads: {@link #reclaim(long)} runs on the storage flusher only; {@link #wanted()} on any
 * thread. Files renamed for deletion go to the releaser thread after the lock is released. The
 * counters are guarded by the queue's lock.
 */
public final class Reclaimer {
    private static final Logger LOG = LoggerFactory.getLogger(Reclaimer.class);
    /** Rule "reclaim is never forgotten": a pass runs at least this often, whatever asked for one. */
    private static final long PASS_INTERVAL_NANOS = 100_000_000L;
    /** Relocation checks free space for this many bytes of copies at a time (one statfs each). */
    private static final long RELOCATION_CHECK_BYTES = 1L << 20;

    /** What the reclaimer needs of the queue's open readers. */
    public interface Readers {
        /** The oldest segment an open reader is in, {@link Integer#MAX_VALUE} if none (rule R1). */
        int oldestSegment();

        /** A straggler of {@code fromSegment} was copied to {@code newId}: readers past that segment skip the copy. */
        void copied(int fromSegment, long newId);
    }

    /**
     * Writes a record to the queue as an append does (log, ack state, durability), under the queue's
     * lock; returns its id.
     */
    public interface RecordWriter {
        long write(RecordCodec record);
    }

    /** Forces what the reclaimer needs durable before deleting a relocated source (rule R4); on the flusher. */
    public interface Forcing {
        /**
         * Forces the segments holding every id from {@code fromId} to {@code throughId}.
         *
         * @throws io.sluice.storage.StorageFilesExhaustedException if a file could not be opened for want of
         *         descriptors: nothing failed, and the force can be tried again
         */
        void segments(long fromId, long throughId);

        /** Forces the ack journal. */
        void ackJournal();

        /**
         * True once the queue's storage failed (rule "a failed force is final"): a force tried again would
         * succeed without the data on disk, so nothing may depend on one any more.
         */
        boolean failed();

        /** What the queue forces before deleting a relocated source (rule R4): its segments, then its journal. */
        static Forcing of(SegmentRange segments, Runnable ackJournal, java.util.function.BooleanSupplier failed) {
            return new Forcing() {
                @Override
                public void segments(long fromId, long throughId) {
                    segments.force(fromId, throughId);
                }

                @Override
                public void ackJournal() {
                    ackJournal.run();
                }

                @Override
                public boolean failed() {
                    return failed.getAsBoolean();
                }
            };
        }
    }

    /** Forces the segments holding the ids from one to another. */
    @FunctionalInterface
    public interface SegmentRange {
        void force(long fromId, long throughId);
    }

    /** Discards a record of {@code length} bytes that failed its checksum (logs, counts and acknowledges it); under the queue's lock. */
    public interface CorruptRecords {
        void discard(long id, int length, String problem);
    }

    private final String queueName;
    private final ReentrantLock lock;
    private final SegmentLog log;
    private final AckLog ackLog;
    private final AckStateReader acks;
    private final ReclaimPolicy policy;
    private final FileReleaser releaser;
    private final Readers readers;
    private final CorruptRecords corruptRecords;
    private final RecordWriter writer;
    private final Forcing forcing;
    /** Fails the queue's storage for an I/O failure writing the ack state, and returns what to throw. */
    private final Function<IOException, RuntimeException> ackStateFailed;
    private final RelocationIntent intent;
    private final DiskSpaceGuard diskGuard;
    private final long relocationFloorBytes;
    private final Runnable wakeFlusher;
    private final RecordCodec copyCodec = new RecordCodec();
    private final ReclaimFailures failures;

    private volatile boolean wanted = true;
    private volatile boolean closed;
    private long lastPassNanos;
    private long reclaimedSegments;
    private long reclaimedBytes;
    private long relocatedMessages;
    /**
     * Segments at or after this one stay, whatever their acks: their records are not yet in a durable
     * producer checkpoint, and a resend of one of them must still be recognised after a restart (rule
     * "producer state before reclaim", docs/storage.md). Set by the queue's owner, read by the flusher.
     */
    private volatile int keepFrom = Integer.MAX_VALUE;
    /**
     * Rule "a source waits for its copies' forces": the segments whose stragglers were copied (or are being
     * copied) and whose copies are not yet known durable with their journal records, because their pass's
     * force was refused for want of descriptors. They read as fully acknowledged, and go only after a later
     * pass forced what they wait for. Flusher thread only, like the three fields below.
     */
    private final TreeSet<Integer> awaitingForces = new TreeSet<>();
    /**
     * Rule "a reclaim is journaled on disk before its file goes": fully acknowledged segments journaled as reclaimed,
     * to be renamed once the journal is forced past that record. Renamed at once, a machine crash could keep the
     * rename and lose the record (the journal is forced on its interval), and with the write segment lost too (under
     * {@code never}, never forced) nothing on disk said the segment had been, and appends gave its ids again
     * ({@code ReclaimedSegmentIdsMachineCrashTest}). Flusher thread only.
     */
    private final TreeSet<Integer> journaledAwaitingForce = new TreeSet<>();
    /**
     * Rule R1 at the rename: segments journaled as reclaimed, the journal forced past their record, whose rename waits for
     * the readers. A reader opened between the pick and the rename starts at the oldest unacknowledged message, which may
     * be in an earlier segment, and walks into a picked one; renamed under it, its file would stay mapped once deleted.
     * Each pass renames those now before every reader and the keep-from mark. Flusher thread only.
     */
    private final TreeSet<Integer> journaledAwaitingReaders = new TreeSet<>();
    /** The first and last copy not yet covered by a successful force, or -1. */
    private long firstUnforcedCopy = -1;
    private long lastUnforcedCopy = -1;
    /** The relocation intent is on disk: written by a pass whose forces have not all succeeded since. */
    private boolean intentOnDisk;
    /** A force for the awaiting sources was refused for want of descriptors (logged once per episode). */
    private boolean waitingForDescriptor;
    /** The releaser will tell this queue when the store frees a descriptor ({@link #askWhenADescriptorIsFreed}). */
    private final AtomicBoolean toldWhenADescriptorIsFreed = new AtomicBoolean();

    public Reclaimer(String queueName, ReentrantLock lock, SegmentLog log, AckLog ackLog, ReclaimPolicy policy,
                     FileReleaser releaser, Readers readers, RecordWriter writer, CorruptRecords corruptRecords,
                     Forcing forcing, Function<IOException, RuntimeException> ackStateFailed, RelocationIntent intent,
                     DiskSpaceGuard diskGuard, long relocationFloorBytes, Runnable wakeFlusher) {
        this.queueName = queueName;
        this.lock = lock;
        this.log = log;
        this.ackLog = ackLog;
        this.acks = ackLog.state();
        this.policy = policy;
        this.releaser = releaser;
        this.readers = readers;
        this.corruptRecords = corruptRecords;
        this.writer = writer;
        this.forcing = forcing;
        this.ackStateFailed = ackStateFailed;
        this.intent = intent;
        this.diskGuard = diskGuard;
        this.relocationFloorBytes = relocationFloorBytes;
        this.wakeFlusher = wakeFlusher;
        this.failures = new ReclaimFailures(queueName);
    }

    /**
     * Asks for a pass soon: a roll, a segment fully acknowledged, a reader closed or moved on. Rule "what held a
     * segment back asks for a pass when it lets go" (docs/storage.md): whoever clears the last condition keeping a
     * segment asks, after changing what the pass reads, since the pass clears the flag before it reads; the periodic
     * pass is a safety net, not the way a segment gets reclaimed.
     */
    public void wanted() {
        wanted = true;
    }

    /** The queue is closing: no pass starts after this. */
    public void close() {
        closed = true;
    }

    /**
     * Keeps segment {@code segment} and every later one (see {@link #keepFrom}); any thread. A move forward may free
     * segments that the acks' own pass found held (the checkpoint is durable only after them, on the owner's writer
     * thread), so it asks for a pass and wakes the flusher: before, those segments waited for the periodic pass.
     */
    public void keepFrom(int segment) {
        int before = keepFrom;
        keepFrom = segment;
        if (segment > before) {
            wanted();
            wakeFlusher.run();
        }
    }

    /** Flusher thread: deletes fully acknowledged segments and relocates stragglers. True if it deleted any. */
    public boolean reclaim(long nowNanos) {
        // Rule "reclaim is never forgotten": besides the events that ask for it, a pass runs every 100 ms,
        // which also catches segments that acks brought down to a few stragglers, and sources awaiting forces.
        boolean due = nowNanos - lastPassNanos > PASS_INTERVAL_NANOS;
        if ((!wanted && !due) || closed) {
            return false;
        }
        lastPassNanos = nowNanos;
        wanted = false;
        try {
            boolean deleted = pass(nowNanos);
            failures.succeeded();
            return deleted;
        } catch (RuntimeException e) {
            // Not asked for again: the periodic pass tries again, never a loop. A pass that met the queue's close is no
            // failure; an Error (a mapped access that faulted) fails the queue's storage, which says so itself.
            if (!closed) {
                failures.failed(nowNanos, e);
            }
            throw e;
        }
    }

    /** A pass: see the class javadoc. */
    private boolean pass(long nowNanos) {
        // Rule "a failed queue moves no message": once a force failed, no copy can be made durable, and a source
        // awaiting its copies' forces stays for good (until a restart reads the files back).
        boolean failed = forcing.failed();
        List<Path> toDelete = new ArrayList<>();
        List<Integer> toRelocate = new ArrayList<>();
        long relocateAfter;
        lock.lock();
        try {
            if (closed) {
                return false;
            }
            for (ReclaimDecision d : policy.decide(segmentStates(nowNanos), log.writeSegment(),
                    Math.min(readers.oldestSegment(), keepFrom))) {
                if (d.action() == ReclaimDecision.Action.RELOCATE && acks.unackedCount(d.segment()) > 0) {
                    if (!failed) {
                        toRelocate.add(d.segment());
                    }
                } else if (acks.unackedCount(d.segment()) == 0 && !awaitingForces.contains(d.segment())
                        && !journaledAwaitingForce.contains(d.segment()) && !journaledAwaitingReaders.contains(d.segment())
                        && log.tallies().get(d.segment()) != null) {
                    // A source awaiting its copies' forces reads as fully acknowledged: it goes only after them (R4).
                    io(() -> ackLog.segmentReclaimed(d.segment()));
                    journaledAwaitingForce.add(d.segment());
                }
            }
            // Only when something is to be relocated: Chronicle's lastIndex() searches the last segment.
            relocateAfter = toRelocate.isEmpty() ? -1 : log.lastIndex();
        } finally {
            lock.unlock();
        }
        try {
            if (!toRelocate.isEmpty()) {
                relocate(toRelocate, relocateAfter);
            }
            if (!awaitingForces.isEmpty() && !failed) {
                forceCopiesThenDelete(toDelete);
            }
            if (!journaledAwaitingForce.isEmpty() || !journaledAwaitingReaders.isEmpty()) {
                forceJournalThenRename(toDelete, failed);
            }
        } finally {
            if (!toDelete.isEmpty()) {
                lock.lock();
                try {
                    log.refreshListing();
                } finally {
                    lock.unlock();
                }
            }
            toDelete.forEach(releaser::delete);
        }
        return !toDelete.isEmpty();
    }

    /**
     * Steps 2 and 3 of a pass (class javadoc): makes the intent durable, unless one written by an earlier pass
     * whose forces have not all succeeded is still there (its id precedes every copy since), then copies the
     * stragglers of {@code segments}. Each segment awaits its copies' forces from before its first copy.
     */
    private void relocate(List<Integer> segments, long after) {
        if (!intentOnDisk) {
            try {
                intent.write(after);
                intentOnDisk = true;
            } catch (IOException e) {
                LOG.warn("Queue '{}': could not record the relocation intent; relocation waits for the next pass.", queueName, e);
                return;
            }
        }
        lock.lock();
        try {
            if (closed) {
                return;
            }
            for (int segment : segments) {
                // Re-checked: the lock was let go since the decision (rule R1: no reader in it now).
                if (log.tallies().containsKey(segment) && segment < readers.oldestSegment()) {
                    awaitingForces.add(segment);
                    relocate(segment);
                }
            }
        } catch (StorageFilesExhaustedException e) {
            // A copy entering a new segment was refused: the copies written so far are forced (or wait) as any.
            LOG.warn("Queue '{}': relocation stops for now: {}", queueName, e.getMessage());
        } finally {
            lock.unlock();
        }
    }

    /**
     * Steps 4 and 5 of a pass, for every source awaiting its copies' forces, this pass's and those of earlier
     * passes whose forces did not succeed: forces the segments holding the copies, then the ack journal,
     * then renames the sources for deletion and clears the intent. A force refused for want of file
     * descriptors leaves them all waiting for a later pass (rule "a source waits for its copies' forces").
     */
    private void forceCopiesThenDelete(List<Path> toDelete) {
        try {
            if (lastUnforcedCopy >= 0) {
                forcing.segments(firstUnforcedCopy, lastUnforcedCopy);
            }
            forcing.ackJournal();
        } catch (StorageFilesExhaustedException e) {
            askWhenADescriptorIsFreed();
            if (!waitingForDescriptor) {
                waitingForDescriptor = true;
                LOG.warn("Queue '{}': the copies of relocated messages cannot be forced until a file descriptor is free; the "
                        + "segments they were copied from stay until then. {}", queueName, e.getMessage());
            }
            return;
        }
        if (waitingForDescriptor) {
            waitingForDescriptor = false;
            LOG.info("Queue '{}': the copies of relocated messages are forced; the segments they were copied from go.", queueName);
        }
        firstUnforcedCopy = -1;
        lastUnforcedCopy = -1;
        lock.lock();
        try {
            if (closed) {
                return;
            }
            int keep = Math.min(readers.oldestSegment(), keepFrom);
            for (int segment : awaitingForces) {
                if (acks.unackedCount(segment) == 0 && segment < keep) {
                    addIfRemoved(segment, toDelete);
                }
            }
            awaitingForces.clear(); // the copies are durable: any kept back goes the ordinary way (R2) later
        } finally {
            lock.unlock();
        }
        try {
            intent.clear();
            intentOnDisk = false;
        } catch (IOException e) {
            LOG.warn("Queue '{}': could not remove the relocation intent; the next start scans from it.", queueName, e);
        }
    }

    /**
     * Rule "what held a segment back asks for a pass when it lets go": the sources awaiting their copies' forces are
     * held by the want of a descriptor, so the store freeing one asks for a pass and wakes the flusher rather than
     * leave them to the periodic pass. One request at a time; a descriptor freed before it is made is left to that pass.
     */
    private void askWhenADescriptorIsFreed() {
        if (toldWhenADescriptorIsFreed.compareAndSet(false, true)) {
            releaser.whenDescriptorFreed(() -> {
                toldWhenADescriptorIsFreed.set(false);
                wanted();
                wakeFlusher.run();
            });
        }
    }

    /**
     * Rule "a reclaim is journaled on disk before its file goes" ({@link #journaledAwaitingForce}): forces the journal,
     * without the queue's lock, then renames the segments it made known as reclaimed. A force refused for want of
     * descriptors leaves them for a later pass; with the journal's record on disk and the file still there, a crash
     * leaves what recovery finishes (finishReclaimedDeletes). Once the queue's storage {@code failed}, no force can be
     * relied on (rule "a failed force is final") and they are renamed at once, as before the rule: acknowledged segments
     * still give their disk back. Rule R1 is checked again at the rename, under the lock, as at the pick: a segment at or
     * after the oldest reader's, or the keep-from mark, waits in {@link #journaledAwaitingReaders} for a later pass.
     */
    private void forceJournalThenRename(List<Path> toDelete, boolean failed) {
        if (!journaledAwaitingForce.isEmpty()) {
            try {
                if (!failed) {
                    forcing.ackJournal();
                }
            } catch (StorageFilesExhaustedException e) {
                askWhenADescriptorIsFreed();
                return;
            }
            journaledAwaitingReaders.addAll(journaledAwaitingForce);
            journaledAwaitingForce.clear();
        }
        lock.lock();
        try {
            if (closed) {
                return;
            }
            int keep = Math.min(readers.oldestSegment(), keepFrom);
            for (Iterator<Integer> it = journaledAwaitingReaders.headSet(keep, false).iterator(); it.hasNext(); ) {
                Path deleting = renameReclaimed(it.next());
                if (deleting != null) {
                    toDelete.add(deleting);
                }
                it.remove();
            }
        } finally {
            lock.unlock();
        }
    }

    private void addIfRemoved(int segment, List<Path> toDelete) {
        Path deleting = removeSegment(segment);
        if (deleting != null) {
            toDelete.add(deleting);
        }
    }

    private List<SegmentState> segmentStates(long nowNanos) {
        List<SegmentState> states = new ArrayList<>(log.tallies().size());
        int writeSegment = log.writeSegment();
        for (Map.Entry<Integer, SegmentTally> e : log.tallies().entrySet()) {
            SegmentTally t = e.getValue();
            long sealedFor = e.getKey() >= writeSegment ? 0
                    : t.sealedAtNanos() == SegmentTally.SEALED_BEFORE_OPEN ? Long.MAX_VALUE
                    : nowNanos - t.sealedAtNanos();
            states.add(new SegmentState(e.getKey(), t.messages(), t.messages() == 0 ? 0 : acks.unackedCount(e.getKey()),
                    t.bytes(), sealedFor));
        }
        return states;
    }

    /**
     * Copies the unacknowledged messages of {@code segment} forward, keeping their id and delivery
     * count; the copies join those awaiting a force ({@link #firstUnforcedCopy}).
     */
    private void relocate(int segment) {
        long first = SegmentRollCycle.INSTANCE.toIndex(segment, 0);
        long end = SegmentRollCycle.INSTANCE.toIndex(segment + 1, 0);
        List<Long> stragglers = new ArrayList<>();
        for (long p = acks.nextUnackedId(first); p >= 0 && p < end; p = acks.nextUnackedId(p + 1)) {
            stragglers.add(p);
        }
        RecordCodec source = log.randomReadCodec();
        long copiedBytes = 0;
        long checkedBytes = 0;
        for (long physical : stragglers) {
            int length = log.read(physical);
            if (length < 0) {
                continue;
            }
            String problem = source.loaded(length);
            if (problem != null) {
                corruptRecords.discard(physical, length, problem);
                continue;
            }
            long originalId = source.relocated() ? source.originalId() : physical;
            if (source.relocated() && resolveCopy(physical, originalId) == RelocatedCopies.Outcome.DISCARDED) {
                continue; // validated before a copy of it is written: AckLog.relocate would refuse it
            }
            int deliveries = Math.max(acks.deliveryCount(originalId), source.deliveryCount());
            // A copy keeps what the record is (forwarded, staged by a transaction), not only what it says.
            int kept = source.flags() & (RecordCodec.FLAG_FORWARDED | RecordCodec.FLAG_TRANSACTIONAL);
            copyCodec.encode(RecordCodec.FLAG_RELOCATED | kept, originalId, deliveries, source.producerId(),
                    source.producerSequence(), source.timestampMillis(),
                    ByteBuffer.wrap(source.array(), source.headersOffset(), source.headersLength()),
                    ByteBuffer.wrap(source.array(), source.payloadOffset(), source.payloadLength()));
            long copyBytes = copyCodec.length() + 8L;
            try {
                // Rule "relocation stays within the reserve": it may use the reserve, never the floor below it.
                // Free space is looked up once per RELOCATION_CHECK_BYTES of copies, not once per copy.
                if (copiedBytes + copyBytes > checkedBytes) {
                    diskGuard.reserveWithinMargin(RELOCATION_CHECK_BYTES + copyBytes, relocationFloorBytes);
                    checkedBytes = copiedBytes + RELOCATION_CHECK_BYTES + copyBytes;
                }
                copiedBytes += copyBytes;
            } catch (StorageFullException e) {
                LOG.warn("Queue '{}': relocation out of segment {} stops for now: {}.", queueName, SegmentFiles.fileName(segment),
                        e.getMessage());
                break;
            }
            long newId = writer.write(copyCodec);
            io(() -> ackLog.relocate(originalId, newId));
            relocatedMessages++;
            readers.copied(segment, newId);
            if (firstUnforcedCopy < 0) {
                firstUnforcedCopy = newId;
            }
            lastUnforcedCopy = newId;
        }
        // The random tailer may still map the old segment; drop it so the file can be unmapped.
        log.releaseRandomTailer();
        if (!stragglers.isEmpty()) {
            LOG.info("Queue '{}': moved {} unacknowledged messages forward out of segment {} so it can be reclaimed.",
                    queueName, stragglers.size(), SegmentFiles.fileName(segment));
            wakeFlusher.run();
        }
    }

    private RelocatedCopies.Outcome resolveCopy(long copyId, long originalId) {
        try {
            return RelocatedCopies.resolve(queueName, ackLog, copyId, originalId);
        } catch (IOException e) {
            throw ackStateFailed.apply(e);
        }
    }

    /** Journals {@code segment} as reclaimed and takes it out of the log; returns the file to unlink, or null. */
    private Path removeSegment(int segment) {
        if (log.tallies().get(segment) == null) {
            return null;
        }
        io(() -> ackLog.segmentReclaimed(segment));
        return renameReclaimed(segment);
    }

    /** Takes a segment the ack state knows as reclaimed out of the log; returns its file's new name, null if not renamed. */
    private Path renameReclaimed(int segment) {
        SegmentTally tally;
        try {
            tally = log.removeSegment(segment);
        } catch (IOException e) {
            LOG.warn("Queue '{}': could not rename {} for deletion.", queueName, SegmentFiles.fileName(segment), e);
            return null;
        }
        if (tally == null) {
            return null;
        }
        reclaimedSegments++;
        reclaimedBytes += tally.bytes();
        return log.deletingFile(segment);
    }

    /** Segments deleted since the queue was opened; under the queue's lock. */
    public long reclaimedSegments() {
        return reclaimedSegments;
    }

    /** Their bytes; under the queue's lock. */
    public long reclaimedBytes() {
        return reclaimedBytes;
    }

    /** Passes that threw since the queue was opened (rule "a failing pass is counted, and logged sparingly"); any thread. */
    public long failedPasses() {
        return failures.count();
    }

    /** Messages relocated since the queue was opened; under the queue's lock. */
    public long relocatedMessages() {
        return relocatedMessages;
    }

    private interface IoAction {
        void run() throws IOException;
    }

    private void io(IoAction action) {
        try {
            action.run();
        } catch (IOException e) {
            throw ackStateFailed.apply(e);
        }
    }
}
