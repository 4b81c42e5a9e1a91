package io.sluice.storage.ack;

import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The durable ack state of one queue, owning one directory; the facade the segment store calls. Not
 * thread-safe: the queue's lock guards every call except {@link #force()}, which the storage flusher
 * calls without it (the journal's mapping lock excludes it from growth and close, see
 * {@link AckJournal}).
 *
 * <p><b>Files.</b> {@code acks.checkpoint} (see {@link AckCheckpoint}) holds the whole state as of
 * generation <i>g</i>; {@code acks.journal} (see {@link AckJournal}) holds, in order, every change
 * made since, and carries the same generation <i>g</i>. {@code *.tmp} files are half-made versions of
 * either and are deleted on open.
 *
 * <p><b>Lifecycle and recovery order.</b>
 * <ol>
 *   <li>{@link #open} loads the checkpoint (or starts empty at generation 0).</li>
 *   <li>The store calls {@link #segmentGrew} once for every segment file it finds, with the message
 *       count read from that file. Segment counts are never journaled: the segment files are the
 *       truth about them.</li>
 *   <li>{@link #recover()} reconciles and replays: a message the checkpoint names by a relocated copy that is not on
 *       disk goes back to the slot it was relocated from ({@link LostCopies}); a reported segment at or below the
 *       checkpoint's highest segment
 *       that the checkpoint does not hold was reclaimed before, and is returned so the store can
 *       finish deleting it; a reported segment with fewer messages than the checkpoint saw (a machine
 *       crash lost its tail) is truncated, forgetting the acks of the lost messages. Then the journal
 *       is replayed if its generation equals the checkpoint's, leniently: a record about a message
 *       that no longer exists is skipped. Then a segment still held but not reported by the store is
 *       dropped (its file is gone). Finally {@link #checkpoint()} runs, so the state recovered
 *       is on disk and appends never continue after a possibly torn journal tail.</li>
 *   <li>From then on, every mutating call changes the in-memory {@link AckTracker} and appends one
 *       journal record before it returns; {@link #segmentGrew} just extends the tracker.</li>
 * </ol>
 *
 * <p><b>Growth, then rotation.</b> A new journal is small ({@link AckJournal#INITIAL_BYTES}). When it has
 * no room for a record, it is grown (doubled, see {@link AckJournal} for the steps and the crash after
 * each) if it is below its maximum, it filled fast, and the {@link GrowthBudget} grants the bytes,
 * which in the store means free disk space stays above the reserve after them. Rule "only a fast
 * journal grows": it filled fast if less than {@value #GROW_IF_FILLED_WITHIN_MS} ms passed since it
 * was started (created, rotated or last grown), by the store's clock. A busy queue's journal so reaches
 * the size it fills in about that time and then rotates about that often (under W1, the maximum);
 * a slow queue's stays small, which keeps the pages it has written, and which stay resident in the
 * broker's mapping, at {@link AckJournal#INITIAL_BYTES}. Otherwise — a slow journal, at the maximum,
 * growth refused, or the growth failing with an I/O error — the journal rotates: {@link #checkpoint()} runs
 * instead of the append (the checkpoint already contains the change), so an ack never fails because
 * the journal could not grow. Rotation's steps, and a crash after each:
 * <ol>
 *   <li>write {@code acks.checkpoint.tmp} with generation <i>g</i>+1, fsync. Crash: the tmp file is
 *       deleted on open; checkpoint <i>g</i> + journal <i>g</i> are intact.</li>
 *   <li>rename it to {@code acks.checkpoint}, fsync the directory. Crash: checkpoint <i>g</i>+1 +
 *       journal <i>g</i>; the journal's generation differs, so it is ignored, which is right because
 *       the checkpoint holds everything it recorded.</li>
 *   <li>reuse the journal file (see {@link AckJournal}): write generation <i>g</i>+1 into its header
 *       through the mapping and append from its start again. Nothing is forced here; the flusher's
 *       next {@link #force()} is. Crash before the header reaches the disk: as step 2. After: a
 *       journal of the checkpoint's generation, whose records of generation <i>g</i> fail their CRC.</li>
 * </ol>
 * Recovery's checkpoint writes a new, zero-filled journal under {@code acks.journal.tmp} instead of
 * step 3 (fsync, rename, fsync the directory), so a journal is never appended to after a replay.
 * A journal newer than the checkpoint cannot arise from these steps; it means the checkpoint was
 * lost or replaced, and {@link #recover()} refuses with {@link CorruptAckStateException}.
 *
 * <p>Rule "no record behind a newer checkpoint": a rotation that throws (its directory force failed, say) may have
 * renamed checkpoint <i>g</i>+1 into place, beside journal <i>g</i>, which recovery would then ignore. So until a
 * checkpoint completes the journal takes no record: every change checkpoints instead (and throws while that fails),
 * and the journal is reused once one completes. Before this rule, acks appended into journal <i>g</i> after such a
 * failure returned and were forced, and a restart brought their messages back ({@code FailedRotationTest}).
 *
 * <p><b>A new queue.</b> {@link #prepareNew} and {@link Prepared} create the files that
 * {@link #open} and {@link #recover()} would for an empty directory (checkpoint and journal of
 * generation {@value #FIRST_GENERATION}, each renamed into place only after it was forced), but leave
 * each force to the caller: the store creates a group of queues by writing all their files, then forcing
 * them all, then installing them, then forcing their directories (docs/storage.md, "Creating queues").
 * A crash at any step leaves either nothing under the real names (an empty state, which is the new
 * queue's state) or complete files.
 *
 * <p><b>What a crash can lose.</b> A process crash (kill -9): nothing that a call here returned from —
 * journal appends land in the page cache through the mapping, and checkpoints are fsynced. A machine
 * crash: the journal records appended since the last {@link #force()}; replay stops at the first torn
 * record, so changes after it are lost too even if their pages reached the disk. If a call throws
 * {@link IOException} (the disk is full during a rotation), its change is applied in memory but durable only if
 * the checkpoint reached the disk after all; treat the queue's storage as failed.
 *
 * <p>The only clock read here is the one given to {@link #growthBudget}, for the growth rule above;
 * rotation itself is driven by journal space.
 */
public final class AckLog implements Closeable {
    /** Outcome of {@link #recover()}, for the store and the start-up log. */
    public record Recovery(long checkpointGeneration, int journalRecordsReplayed, int[] droppedMissingSegments,
                           int[] reclaimedSegmentsStillOnDisk) {
    }

    /**
     * Grants the disk space a journal growth needs. The store's answers come from its disk guard: yes
     * only while free space minus {@code bytes} stays above the reserve. Called under the queue's lock.
     */
    @FunctionalInterface
    public interface GrowthBudget {
        /** Never grants: the journal keeps its initial size and rotates when full. */
        GrowthBudget NONE = bytes -> false;

        boolean grant(long bytes);
    }

    /**
     * Writes checkpoint {@code generation} of {@code tracker} over {@code file}, as {@link AckCheckpoint#write} does;
     * tests substitute one that fails, before or after its rename.
     */
    @FunctionalInterface
    interface CheckpointWrite {
        void write(Path file, long generation, AckTracker tracker) throws IOException;
    }

    /** The generation of a new queue's first checkpoint and journal (a store with no checkpoint is at 0). */
    static final long FIRST_GENERATION = 1;

    /** Rule "only a fast journal grows" (class javadoc). */
    public static final long GROW_IF_FILLED_WITHIN_MS = 60_000;

    private static final Logger LOG = LoggerFactory.getLogger(AckLog.class);
    /** A delivered range is one dispatch; anything this long did not come from this class. */
    private static final long MAX_REPLAYED_RANGE = 1 << 20;

    private final Path checkpointFile;
    private final Path journalFile;
    private final int journalCapacityBytes;
    private final TreeMap<Integer, Long> reportedSegments = new TreeMap<>();
    private final AckTracker tracker;
    private long generation;
    /** Set once by recovery, cleared by close; volatile for {@link #force()}, which takes no lock. */
    private volatile AckJournal journal;
    private boolean closed;
    private CheckpointWrite checkpointWrite = AckCheckpoint::write;
    /**
     * A checkpoint was begun and has not completed: the file system may hold it, of a later generation than the
     * journal's, so the journal takes no record until one completes (rule "no record behind a newer checkpoint").
     */
    private boolean checkpointIncomplete;
    private GrowthBudget growthBudget = GrowthBudget.NONE;
    private LongSupplier clockMillis = () -> 0;
    /** When the current journal was started (created, rotated or grown), by {@link #clockMillis}. */
    private long journalStartedMillis;
    private long journalGrowths;
    private long journalGrowthsRefused;

    private AckLog(Path directory, int journalCapacityBytes, AckTracker tracker, long generation) {
        this.checkpointFile = directory.resolve(AckFiles.CHECKPOINT);
        this.journalFile = directory.resolve(AckFiles.JOURNAL);
        this.journalCapacityBytes = journalCapacityBytes;
        this.tracker = tracker;
        this.generation = generation;
    }

    /** Loads the checkpoint in {@code directory} (creating the directory if needed); call {@link #recover()} next. */
    public static AckLog open(Path directory, int journalCapacityBytes) throws IOException {
        AckJournal.checkCapacity(journalCapacityBytes);
        Path absolute = directory.toAbsolutePath();
        Files.createDirectories(absolute);
        Files.deleteIfExists(absolute.resolve(AckFiles.CHECKPOINT + ".tmp"));
        Files.deleteIfExists(absolute.resolve(AckFiles.JOURNAL + ".tmp"));
        Path checkpoint = absolute.resolve(AckFiles.CHECKPOINT);
        if (Files.exists(checkpoint)) {
            AckCheckpoint.Loaded loaded = AckCheckpoint.read(checkpoint);
            return new AckLog(absolute, journalCapacityBytes, loaded.tracker(), loaded.generation());
        }
        return new AckLog(absolute, journalCapacityBytes, new AckTracker(), 0);
    }

    public static AckLog open(Path directory) throws IOException {
        return open(directory, AckJournal.DEFAULT_CAPACITY_BYTES);
    }

    /** The ack log of a new queue whose empty files {@link NewAckFiles#install} just put in place. */
    static AckLog installed(Path directory, int journalCapacityBytes, AckJournal journal) {
        AckLog log = new AckLog(directory, journalCapacityBytes, new AckTracker(), FIRST_GENERATION);
        log.journal = journal;
        return log;
    }

    /**
     * Lets the journal grow, in steps up to its maximum, when it filled fast by {@code clockMillis} and
     * {@code budget} grants the bytes (see "Growth, then rotation"); until this is called it never grows
     * ({@link GrowthBudget#NONE}).
     */
    public void growthBudget(GrowthBudget budget, LongSupplier clockMillis) {
        this.growthBudget = Objects.requireNonNull(budget, "budget");
        this.clockMillis = Objects.requireNonNull(clockMillis, "clockMillis");
        this.journalStartedMillis = clockMillis.getAsLong();
    }

    /** For tests: how checkpoints are written, to make one fail. */
    void checkpointWrite(CheckpointWrite write) {
        this.checkpointWrite = Objects.requireNonNull(write, "write");
    }

    /**
     * Before {@link #recover()}: the store found this segment file holding {@code messageCount}
     * messages. After: the segment grew (or a new segment was created above all others).
     */
    public void segmentGrew(int segment, long messageCount) {
        checkOpen();
        if (journal == null) {
            if (segment < 0 || messageCount < 0 || messageCount > SegmentAckBitmap.MAX_MESSAGE_COUNT) {
                throw new IllegalArgumentException("segment " + segment + " with messageCount " + messageCount
                        + " is invalid: segment must be >= 0 and messageCount within 0.." + SegmentAckBitmap.MAX_MESSAGE_COUNT);
            }
            reportedSegments.put(segment, messageCount);
        } else {
            tracker.segmentGrew(segment, messageCount);
        }
    }

    /** Reconciles with the segments reported so far, replays the journal and checkpoints (see class javadoc). */
    public Recovery recover() throws IOException {
        return recover(LostCopies.EarlierCopies.NONE);
    }

    /**
     * As {@link #recover()}; {@code earlierCopies} finds where a message whose copy is not on disk was relocated from,
     * when that is not its original (rule "a lost copy gives its message back", {@link LostCopies}).
     */
    public Recovery recover(LostCopies.EarlierCopies earlierCopies) throws IOException {
        checkOpen();
        if (journal != null) {
            throw new IllegalStateException("ack state in " + checkpointFile.getParent() + " is already recovered");
        }
        // First, while the checkpoint's state is whole: a relocation it holds whose copy a machine crash took.
        LostCopies.restore(tracker, reportedSegments, this::segmentsReclaimedInJournal, earlierCopies);
        List<Integer> dropped = new ArrayList<>();
        List<Integer> stillOnDisk = new ArrayList<>();
        int checkpointHighest = tracker.highestKnownSegment();
        // Before replay: replay must see a segment without a file as not live, because its message
        // count is unknown and its records must go the lenient way (AckTracker#replayRelocation).
        for (int segment : tracker.liveSegments()) {
            if (!reportedSegments.containsKey(segment)) {
                tracker.dropSegmentForReplay(segment);
                dropped.add(segment);
            }
        }
        for (Map.Entry<Integer, Long> entry : reportedSegments.entrySet()) {
            int segment = entry.getKey();
            long count = entry.getValue();
            if (tracker.isLive(segment)) {
                if (count < tracker.messageCount(segment)) {
                    LOG.warn("Segment {} holds {} messages but the ack checkpoint saw {}; forgetting acks of the lost messages.",
                            segment, count, tracker.messageCount(segment));
                }
                tracker.resetMessageCount(segment, count);
            } else if (segment > checkpointHighest) {
                tracker.segmentGrew(segment, count);
            } else {
                stillOnDisk.add(segment);
            }
        }
        List<Integer> reclaimedInJournal = new ArrayList<>();
        int replayed = replayJournal(stillOnDisk, reclaimedInJournal);
        for (int segment : dropped) {
            if (!reclaimedInJournal.contains(segment)) {
                LOG.warn("Segment {} is in the ack checkpoint but its file is gone; its ack state is forgotten.", segment);
            }
        }
        // A segment the journal reclaims is not missing: it was reclaimed before the crash.
        dropped.removeIf(reclaimedInJournal::contains);
        reportedSegments.clear();
        checkpoint();
        LOG.info("Recovered ack state in {}: {} unacknowledged messages in {} segments, {} journal records replayed.",
                checkpointFile.getParent(), tracker.unackedCount(), tracker.liveSegments().length, replayed);
        return new Recovery(generation - 1, replayed, dropped.stream().mapToInt(Integer::intValue).toArray(),
                stillOnDisk.stream().mapToInt(Integer::intValue).sorted().distinct().toArray());
    }

    /** The current state, for reading; change it only through this class so that changes are journaled. */
    public AckStateReader state() {
        return tracker;
    }

    public AckResult ack(long id) throws IOException {
        checkRecovered();
        AckResult result = tracker.ack(id);
        if (result == AckResult.NEWLY_ACKED && roomFor(AckJournal.RecordType.ACK_RANGE)) {
            journal.appendAckRange(id, id);
        }
        return result;
    }

    /**
     * Acknowledges {@code count} ids from {@code ids}, telling {@code newlyAckedPhysical} the physical slot of
     * each one newly acknowledged, and journals each run of consecutive newly acknowledged ids as one range
     * record instead of a record per id (consumers acknowledge in ranges; replaying the range acknowledges
     * exactly those ids, see {@link AckTracker#ackRange}). Returns how many were newly acknowledged.
     *
     * <p>If journaling a run needs a checkpoint that fails, the rest of the batch is still acknowledged in
     * memory, with nothing more written, and the failure is thrown after it: the whole change is applied, as for
     * any call here that throws (class javadoc), for one checkpoint tried, so that no caller hands the rest again
     * (each try a whole checkpoint, up to one per two ids of a batch of scattered ones).
     */
    public int ackAll(long[] ids, int count, java.util.function.LongConsumer newlyAckedPhysical) throws IOException {
        checkRecovered();
        int newly = 0;
        long runFrom = -1;
        long runTo = -1;
        IOException failed = null;
        for (int i = 0; i < count; i++) {
            long id = ids[i];
            long physical = tracker.physicalId(id);
            if (tracker.ack(id) != AckResult.NEWLY_ACKED) {
                continue;
            }
            newly++;
            newlyAckedPhysical.accept(physical);
            if (failed != null) {
                continue;
            }
            if (runFrom >= 0 && id == runTo + 1) {
                runTo = id;
                continue;
            }
            try {
                journalAckRun(runFrom, runTo);
            } catch (IOException e) {
                failed = e;
            }
            runFrom = id;
            runTo = id;
        }
        if (failed != null) {
            throw failed;
        }
        journalAckRun(runFrom, runTo);
        return newly;
    }

    private void journalAckRun(long fromId, long toIdInclusive) throws IOException {
        if (fromId >= 0 && roomFor(AckJournal.RecordType.ACK_RANGE)) {
            journal.appendAckRange(fromId, toIdInclusive);
        }
    }

    /** Acknowledges every existing message in the range (see {@link AckTracker#ackRange}); returns how many were new. */
    public long ackRange(long fromId, long toIdInclusive) throws IOException {
        checkRecovered();
        long newly = tracker.ackRange(fromId, toIdInclusive);
        if (newly > 0) {
            journalAckedRange(fromId, toIdInclusive);
        }
        return newly;
    }

    private void journalAckedRange(long fromId, long toIdInclusive) throws IOException {
        // Replay runs against the final segment counts: clamp so it cannot ack messages appended later.
        long clampedTo = Math.min(toIdInclusive, tracker.highestAssignedId());
        if (roomFor(AckJournal.RecordType.ACK_RANGE)) {
            journal.appendAckRange(fromId, clampedTo);
        }
    }

    /**
     * Acknowledges every unacknowledged message except those named in {@code keep} (ascending, by either name, R2):
     * one range ack, and one journal record, for each gap between them. The work follows the kept messages, the
     * segments and the bitmaps' words, never the messages acknowledged one by one, so that a purge of a large backlog
     * holds the queue's lock only briefly. Returns how many were newly acknowledged.
     */
    public long ackAllExcept(long[] keep) throws IOException {
        checkRecovered();
        long first = tracker.firstUnackedId();
        if (first < 0) {
            return 0;
        }
        // A relocated message kept stays under both its names: a range over either would acknowledge it (R3).
        long[] slots = new long[keep.length * 2];
        int count = 0;
        for (long id : keep) {
            slots[count++] = id;
            long physical = tracker.physicalId(id);
            if (physical != id) {
                slots[count++] = physical;
            }
        }
        Arrays.sort(slots, 0, count);
        return ackGaps(first, tracker.highestAssignedId(), slots, count);
    }

    /**
     * Acknowledges every message with an id in {@code [fromId, toIdInclusive]} but those of {@code keep} (ascending
     * slots): one range ack, and one journal record, for each gap between them. Returns how many were newly acknowledged.
     */
    public long ackRangeExcept(long fromId, long toIdInclusive, long[] keep) throws IOException {
        checkRecovered();
        return ackGaps(fromId, toIdInclusive, keep, keep.length);
    }

    /**
     * Acknowledges the gaps of {@code [fromId, toIdInclusive]} between the first {@code count} ids of {@code keep}
     * (ascending), a range ack and a journal record each. If journaling a gap needs a checkpoint that fails, the later
     * gaps are still acknowledged in memory, with nothing more written, and the failure is thrown after them, as
     * {@link #ackAll} does: a purge is applied whole or not at all, so that the broker's backlog, which it sets from what
     * the purge keeps, matches what is left unacknowledged, with one checkpoint tried.
     */
    private long ackGaps(long fromId, long toIdInclusive, long[] keep, int count) throws IOException {
        long newly = 0;
        long from = fromId;
        IOException failed = null;
        for (int i = 0; i < count && keep[i] <= toIdInclusive; i++) {
            if (keep[i] > from) {
                long acked = tracker.ackRange(from, keep[i] - 1);
                newly += acked;
                failed = journalGap(from, keep[i] - 1, acked, failed);
            }
            from = Math.max(from, keep[i] + 1);
        }
        if (from <= toIdInclusive) {
            long acked = tracker.ackRange(from, toIdInclusive);
            newly += acked;
            failed = journalGap(from, toIdInclusive, acked, failed);
        }
        if (failed != null) {
            throw failed;
        }
        return newly;
    }

    /**
     * Journals a gap {@link #ackGaps} just acknowledged ({@code acked} of its messages newly), unless the call failed
     * already ({@code failed}); returns the call's failure, if any.
     */
    private IOException journalGap(long fromId, long toIdInclusive, long acked, IOException failed) {
        if (acked == 0 || failed != null) {
            return failed;
        }
        try {
            journalAckedRange(fromId, toIdInclusive);
            return null;
        } catch (IOException e) {
            return e;
        }
    }

    public boolean recordDelivery(long id, int deliveryCount) throws IOException {
        checkRecovered();
        boolean recorded = tracker.recordDelivery(id, deliveryCount);
        if (recorded && roomFor(AckJournal.RecordType.DELIVERED)) {
            journal.appendDelivered(id, deliveryCount);
        }
        return recorded;
    }

    /**
     * Records {@code count} deliveries: {@code ids[i]} delivered for the {@code counts[i]}-th time. A
     * run of consecutive ids delivered for the same count (a dispatch of new messages in store order)
     * is journaled as one range record, so the journal grows per dispatch, not per message.
     *
     * <p>If journaling a run needs a checkpoint that fails, the rest of the batch is still recorded in memory, with
     * nothing more written, and the failure is thrown after it, as {@link #ackAll} does: every delivery the broker made
     * counts toward its message's redelivery and dead-letter limits, with one checkpoint tried.
     */
    public void recordDeliveries(long[] ids, int[] counts, int count) throws IOException {
        checkRecovered();
        long runFrom = -1;
        long runTo = -1;
        int runCount = 0;
        IOException failed = null;
        for (int i = 0; i < count; i++) {
            long id = ids[i];
            boolean recorded;
            try {
                recorded = tracker.recordDelivery(id, counts[i]);
            } catch (IllegalArgumentException e) {
                if (failed != null) {
                    // The ack state failed before it: that failure is the one the store must act on.
                    failed.addSuppressed(e);
                    throw failed;
                }
                // A bad id or count: what was applied before it must still reach the journal.
                journalDeliveryRun(runFrom, runTo, runCount);
                throw e;
            }
            if (!recorded || failed != null) {
                continue;
            }
            if (runFrom >= 0 && id == runTo + 1 && counts[i] == runCount) {
                runTo = id;
                continue;
            }
            try {
                journalDeliveryRun(runFrom, runTo, runCount);
            } catch (IOException e) {
                failed = e;
            }
            runFrom = id;
            runTo = id;
            runCount = counts[i];
        }
        if (failed != null) {
            throw failed;
        }
        journalDeliveryRun(runFrom, runTo, runCount);
    }

    private void journalDeliveryRun(long fromId, long toIdInclusive, int deliveryCount) throws IOException {
        if (fromId < 0) {
            return;
        }
        if (fromId == toIdInclusive) {
            if (roomFor(AckJournal.RecordType.DELIVERED)) {
                journal.appendDelivered(fromId, deliveryCount);
            }
        } else if (roomFor(AckJournal.RecordType.DELIVERED_RANGE)) {
            journal.appendDeliveredRange(fromId, toIdInclusive, deliveryCount);
        }
    }

    /** Call after the copy at {@code newId} is written (and {@link #segmentGrew} reported it). */
    public void relocate(long originalId, long newId) throws IOException {
        checkRecovered();
        tracker.relocate(originalId, newId);
        if (roomFor(AckJournal.RecordType.RELOCATED)) {
            journal.appendRelocated(originalId, newId);
        }
    }

    /** Adopts the copy at {@code copyId} as the message {@code originalId} (AckTracker R2a), journaled as a relocation. */
    public void adopt(long originalId, long copyId) throws IOException {
        checkRecovered();
        tracker.adopt(originalId, copyId);
        if (roomFor(AckJournal.RecordType.RELOCATED)) {
            journal.appendRelocated(originalId, copyId);
        }
    }

    /** Call when the store is about to delete a fully acknowledged segment's file (rename first, delete after). */
    public void segmentReclaimed(int segment) throws IOException {
        checkRecovered();
        tracker.removeSegment(segment);
        if (roomFor(AckJournal.RecordType.SEGMENT_RECLAIMED)) {
            journal.appendSegmentReclaimed(segment);
        }
    }

    /**
     * Writes the whole state as the next generation and starts an empty journal (see class javadoc):
     * recovery creates a new journal file, a rotation reuses the file of the full one.
     */
    public void checkpoint() throws IOException {
        checkOpen();
        long next = generation + 1;
        // Set until the write completes: one that throws may have renamed the checkpoint into place already.
        checkpointIncomplete = true;
        checkpointWrite.write(checkpointFile, next, tracker);
        if (journal != null) {
            journal.reuse(next);
        } else {
            journal = AckJournal.create(journalFile, next, journalCapacityBytes);
        }
        generation = next;
        checkpointIncomplete = false;
        journalStartedMillis = clockMillis.getAsLong();
    }

    /**
     * Makes every change made before this call survive a machine crash, and returns how many journal
     * records ({@link #journalRecords()}) that covers. The storage flusher calls it without the queue's
     * lock; before recovery and after close it forces nothing and returns 0 (a force that took the journal before
     * the close released it returns only what a force or the close's checkpoint made durable, {@link AckJournal#force()}).
     */
    public long force() {
        AckJournal current = journal;
        return current == null ? 0 : current.force();
    }

    /**
     * Records journaled so far, rotations included; a change is durable once a {@link #force()} returns
     * at least the count read after it. A change folded into a checkpoint instead is durable already.
     */
    public long journalRecords() {
        AckJournal current = journal;
        return current == null ? 0 : current.recordsAppended();
    }

    /** Drops the journal's written pages from this process's memory (see {@link AckJournal#dropWrittenPages()}); under the queue's lock. */
    public void dropWrittenPages() {
        AckJournal current = journal;
        if (current != null) {
            current.dropWrittenPages();
        }
    }

    /** Current size of the journal file in bytes (0 before recovery and after close). */
    public int journalBytes() {
        AckJournal current = journal;
        return current == null ? 0 : current.sizeBytes();
    }

    /** Times the journal grew since open. */
    public long journalGrowths() {
        return journalGrowths;
    }

    /** Times a growth was refused (no budget) or failed, and the journal rotated instead. */
    public long journalGrowthsRefused() {
        return journalGrowthsRefused;
    }

    public long generation() {
        return generation;
    }

    /** Checkpoints (so the next open replays nothing) and releases the journal mapping, even if that checkpoint throws. */
    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        try {
            if (journal != null) {
                checkpoint();
            }
        } finally {
            closeWithoutCheckpoint();
        }
    }

    /**
     * Releases the journal mapping and writes nothing: for a queue whose open failed, refused or not, whose files stay
     * as they are. What the journal holds since the last checkpoint is replayed at the next open, as after a crash (a
     * close's checkpoint only spares that replay).
     */
    public void closeWithoutCheckpoint() {
        closed = true;
        if (journal != null) {
            journal.close();
            journal = null;
        }
    }

    /** The segments the journal of the checkpoint's generation records as reclaimed, read without applying anything. */
    private Set<Integer> segmentsReclaimedInJournal() {
        Set<Integer> reclaimed = new HashSet<>();
        if (Files.exists(journalFile)) {
            try {
                AckJournal.replay(journalFile, generation, AckJournal.Visitor.segmentsReclaimed(reclaimed::add));
            } catch (IOException e) {
                // The replay proper reads the same file next and fails the same way, which is what the open reports.
            }
        }
        return reclaimed;
    }

    private int replayJournal(List<Integer> stillOnDisk, List<Integer> reclaimedInJournal) throws IOException {
        if (!Files.exists(journalFile)) {
            return 0;
        }
        int[] skipped = new int[1];
        AckJournal.Replay replay = AckJournal.replay(journalFile, generation, new AckJournal.Visitor() {
            @Override
            public void ackRange(long fromId, long toIdInclusive) {
                if (fromId < 0 || toIdInclusive < fromId) {
                    skipped[0]++;
                    return;
                }
                tracker.ackRange(fromId, toIdInclusive);
            }

            @Override
            public void delivered(long id, int deliveryCount) {
                if (id < 0 || deliveryCount < 1) {
                    skipped[0]++;
                    return;
                }
                tracker.replayDelivery(id, deliveryCount);
            }

            @Override
            public void deliveredRange(long fromId, long toIdInclusive, int deliveryCount) {
                if (fromId < 0 || toIdInclusive < fromId || toIdInclusive - fromId >= MAX_REPLAYED_RANGE || deliveryCount < 1) {
                    skipped[0]++;
                    return;
                }
                for (long id = fromId; id <= toIdInclusive; id++) {
                    tracker.replayDelivery(id, deliveryCount);
                }
            }

            @Override
            public void relocated(long originalId, long newId) {
                if (originalId < 0 || newId < 0 || !tracker.replayRelocation(originalId, newId)) {
                    skipped[0]++; // the copy's segment lost its tail
                }
            }

            @Override
            public void segmentReclaimed(int segment) {
                reclaimedInJournal.add(segment);
                if (tracker.isLive(segment)) {
                    tracker.dropSegmentForReplay(segment);
                    if (reportedSegments.containsKey(segment)) {
                        stillOnDisk.add(segment);
                    }
                }
                tracker.restoreHighestKnownSegment(segment);
                tracker.applyDeferredRelocations(segment);
            }
        });
        int lostCopies = tracker.dropDeferredRelocations();
        if (lostCopies > 0) {
            LOG.warn("{} relocated copies never reached the disk (their segment is missing); their originals stay.", lostCopies);
        }
        tracker.dropDanglingAfterReplay();
        if (replay.generation() > generation) {
            throw new CorruptAckStateException(journalFile, 8, "journal generation " + replay.generation()
                    + " is newer than the checkpoint's " + generation + "; the checkpoint was lost or replaced");
        }
        if (skipped[0] > 0) {
            LOG.info("Skipped {} journal records about messages that no longer exist.", skipped[0]);
        }
        return replay.records();
    }

    /**
     * True if the journal can take the record, after growing it if it may; otherwise, or while a checkpoint is
     * incomplete, checkpoints, which captures the change already applied (see "Growth, then rotation" in the class
     * javadoc).
     */
    private boolean roomFor(AckJournal.RecordType type) throws IOException {
        if (!checkpointIncomplete && (journal.hasRoomFor(type) || grewFor(type))) {
            return true;
        }
        checkpoint();
        return false;
    }

    private boolean grewFor(AckJournal.RecordType type) {
        int growth = journal.growthBytes();
        if (growth == 0) {
            return false;
        }
        long now = clockMillis.getAsLong();
        if (now - journalStartedMillis >= GROW_IF_FILLED_WITHIN_MS) {
            return false; // rule "only a fast journal grows"
        }
        if (!growthBudget.grant(growth)) {
            journalGrowthsRefused++;
            return false;
        }
        try {
            journal.grow();
        } catch (IOException e) {
            journalGrowthsRefused++;
            LOG.warn("Could not grow the ack journal {} from {} by {} bytes ({}); checkpointing instead.",
                    journal.file(), journal.sizeBytes(), growth, e.getMessage());
            return false;
        }
        journalGrowths++;
        journalStartedMillis = now;
        return journal.hasRoomFor(type);
    }

    private void checkRecovered() {
        checkOpen();
        if (journal == null) {
            throw new IllegalStateException("ack state in " + checkpointFile.getParent()
                    + " is not recovered yet: report segments with segmentGrew, then call recover()");
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("ack state in " + checkpointFile.getParent() + " is closed");
        }
    }
}
