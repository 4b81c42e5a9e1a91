package io.sluice.storage.crash;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.ack.AckCheckpoint;
import io.sluice.storage.ack.AckFiles;
import io.sluice.storage.ack.AckJournal;
import io.sluice.storage.ack.AckResult;
import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.files.FileDescriptors;
import io.sluice.storage.reclaim.RelocationIntent;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static io.sluice.storage.Await.until;
import static io.sluice.storage.ReaderIds.readAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Relocation against a machine crash, on disk images built from exactly what was forced
 * ({@link ForcedDiskImage}). A straggler is copied forward so that its nearly acknowledged segment can
 * be deleted; the machine then loses power. Whatever was forced, the straggler must come back exactly
 * once and be acknowledgeable: the source may be deleted only after the copy and the journal record
 * of the relocation are both forced (docs/storage.md, rule R4), and a copy whose relocation the
 * journal lost, with its source gone (written by a store without that rule), is adopted. And when the
 * relocation's force is refused for want of file descriptors (injected at the {@link FileForcer} seam as
 * the error a force's open throws then, {@link FileDescriptors#exhaustedError}), the source reads as fully
 * acknowledged, yet must stay until a later pass forced the copies and the journal (rule "a source waits
 * for its copies' forces").
 */
class RelocationMachineCrashTest {
    private static final int PAYLOAD_BYTES = 1000;

    @TempDir
    Path temp;
    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private static StoreConfig config() {
        return config(DurabilityMode.ALWAYS);
    }

    private static StoreConfig config(DurabilityMode mode) {
        return config(mode, 8 << 20);
    }

    private static StoreConfig config(DurabilityMode mode, int ackJournalBytes) {
        return StoreConfig.builder()
                .durability(mode)
                .ackJournalBytes(ackJournalBytes)
                .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                .maxMessageBytes(64 << 10)
                .relocateAfterMs(0)
                .syncIntervalMs(60_000) // the ack journal is forced at start, then only when the store must (so are
                                        // segments under `interval`)
                .reservedDiskBytes(64L << 20)
                .build();
    }

    private static byte[] payload(long seq) {
        return ByteBuffer.allocate(PAYLOAD_BYTES).order(ByteOrder.LITTLE_ENDIAN).putLong(seq).array();
    }

    /** What the crash left, after the straggler of segment 0 was relocated and segment 0 deleted. */
    private record Scenario(ForcedDiskImage disk, QueueStore queue, List<Long> ids, long straggler, int journalForcesBefore) {
    }

    /**
     * Fills segment 0 and part of 1 (all confirmed), acknowledges all of segment 0 but one message, and
     * waits until the reclaimer has relocated it and deleted segment 0, and the copy is durable. With
     * {@code rollAfter}, further confirmed appends move the copy out of the last segment.
     */
    private Scenario relocateAStraggler(String dataDirectory, boolean rollAfter) throws Exception {
        Path data = temp.resolve(dataDirectory);
        ForcedDiskImage disk = new ForcedDiskImage(data);
        MessageStore store = MessageStore.open(data, config(), disk);
        open.add(store);
        QueueStore q = store.createQueue("q");
        List<Long> ids = new ArrayList<>();
        long seq = 0;
        while (q.segmentNumbers().size() < 2) {
            ids.add(q.append(null, payload(seq++)));
        }
        q.whenDurable(ids.get(ids.size() - 1)).get(10, TimeUnit.SECONDS);
        until("the ack journal was forced once", () -> disk.journalForces("q") > 0);
        int journalForcesBefore = disk.journalForces("q");
        int first = q.segmentNumbers().get(0);
        long straggler = ids.get(7);
        long[] others = ids.stream().mapToLong(Long::longValue).filter(id -> (int) (id >>> 32) == first && id != straggler).toArray();
        q.ackAll(others, others.length);
        until("the straggler's segment is reclaimed and its pass over", () -> !q.segmentNumbers().contains(first) && passOver(data));
        assertEquals(1, q.stats().relocatedMessages());
        if (rollAfter) {
            int copySegment = q.segmentNumbers().get(q.segmentNumbers().size() - 1);
            while (q.segmentNumbers().get(q.segmentNumbers().size() - 1) == copySegment) {
                ids.add(q.append(null, payload(seq++)));
            }
        }
        long written = q.writtenIndex();
        q.whenDurable(written).get(10, TimeUnit.SECONDS);
        List<Long> live = new ArrayList<>(ids);
        live.removeIf(id -> (int) (id >>> 32) == first && id != straggler);
        return new Scenario(disk, q, live, straggler, journalForcesBefore);
    }

    /**
     * The relocation pass has cleared its intent, its last step after renaming the source: the image is
     * built from a directory that no pass is changing (a file removed during the walk fails it).
     */
    private static boolean passOver(Path data) {
        return !Files.exists(data.resolve("queues/q").resolve(RelocationIntent.FILE)) && noDeletePending(data);
    }

    /** The releaser has unlinked every segment renamed for deletion: none will vanish during the image's walk. */
    private static boolean noDeletePending(Path data) {
        try (java.util.stream.Stream<Path> files = Files.list(data.resolve("queues/q/segments"))) {
            return files.noneMatch(f -> f.getFileName().toString().endsWith(".deleting"));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Opens the image and reads every unacknowledged message once, by id (their first 8 bytes are their sequence). */

    private static void assertEachExactlyOnce(List<Long> expected, List<Long> read) {
        Set<Long> distinct = new HashSet<>(read);
        assertEquals(read.size(), distinct.size(), "a message was read twice: " + read.size() + " reads of " + distinct.size());
        Set<Long> missing = new HashSet<>(expected);
        missing.removeAll(distinct);
        assertTrue(missing.isEmpty(), "lost after the crash: " + missing.stream().map(Long::toHexString).toList());
        assertEquals(new HashSet<>(expected), distinct);
    }

    @Test
    void aRelocatedStragglerSurvivesAMachineCrashJustAfterItsSourceSegmentWasDeleted() throws Exception {
        Scenario s = relocateAStraggler("data", false);
        Path image = temp.resolve("image");
        s.disk().build(image);

        MessageStore recovered = MessageStore.open(image, config());
        open.add(recovered);
        QueueStore q = recovered.queue("q");
        assertEachExactlyOnce(s.ids(), readAll(q));
        assertEquals(AckResult.NEWLY_ACKED, q.ack(s.straggler()), "the recovered straggler can be acknowledged");
    }

    /**
     * The window between a relocated source's rename and the force of its SEGMENT_RECLAIMED record (docs/storage.md,
     * R4: the rename follows the record's append, not its force): the crash keeps the rename and loses the record. What
     * the source held is on that disk all the same, forced by step 4 of the pass before the rename: the acks of its
     * other messages and the straggler's RELOCATED record in the journal, the copy in its segment. Recovery finds the
     * source gone and not known reclaimed, forgets its slots, and the copy holds the message: it is read once and can be
     * acknowledged, and no id of the source is given again (the copy's segment, later, is on the disk).
     */
    @Test
    void aSourceRenamedBeforeItsReclaimRecordWasForcedLosesNothingInAMachineCrash() throws Exception {
        Scenario s = relocateAStraggler("data", false);
        Path image = temp.resolve("image");
        s.disk().build(image);
        Path queue = image.resolve("queues/q");
        assertFalse(Files.exists(queue.resolve("segments/19700101-000000.cq4")), "the source's rename is on the disk");
        long generation = AckCheckpoint.read(queue.resolve("acks").resolve(AckFiles.CHECKPOINT)).generation();
        List<Integer> reclaimed = new ArrayList<>();
        AckJournal.Replay replay = AckJournal.replay(queue.resolve("acks").resolve(AckFiles.JOURNAL), generation,
                AckJournal.Visitor.segmentsReclaimed(reclaimed::add));
        assertTrue(replay.records() > 0, "the relocation's records are on the disk");
        assertEquals(List.of(), reclaimed, "the source's SEGMENT_RECLAIMED record is not");
        long lastBefore = s.ids().stream().mapToLong(Long::longValue).max().orElseThrow();

        MessageStore recovered = MessageStore.open(image, config());
        open.add(recovered);
        QueueStore q = recovered.queue("q");
        assertEachExactlyOnce(s.ids(), readAll(q));
        assertEquals(AckResult.NEWLY_ACKED, q.ack(s.straggler()), "the copy can be acknowledged");
        long next = q.append(null, payload(-1));
        assertTrue(next > lastBefore, "the first append after the crash got 0x" + Long.toHexString(next));
    }

    /**
     * As above, with a source the ack checkpoint knows (a rotation counted it) and a copy in a segment it does not (begun
     * after the rotation): the open asks the ack state whether the missing source held unacknowledged messages, and its
     * replay must apply the relocation into that later segment to find none; otherwise the queue would be refused.
     */
    @Test
    void aSourceTheCheckpointKnowsRenamedBeforeItsReclaimRecordWasForcedOpens() throws Exception {
        Path data = temp.resolve("data");
        ForcedDiskImage disk = new ForcedDiskImage(data);
        MessageStore store = MessageStore.open(data, config(DurabilityMode.ALWAYS, 4096), disk);
        open.add(store);
        QueueStore q = store.createQueue("q");
        List<Long> ids = new ArrayList<>();
        long seq = 0;
        while (ids.size() < 100) {
            ids.add(q.append(null, payload(seq++)));
        }
        int first = (int) (ids.get(0) >>> 32);
        Path checkpoint = data.resolve("queues/q/acks").resolve(AckFiles.CHECKPOINT);
        long generation = AckCheckpoint.read(checkpoint).generation();
        for (int count = 1; AckCheckpoint.read(checkpoint).generation() == generation; count++) {
            q.recordDelivery(ids.get(0), count); // fills the journal until it rotates: the checkpoint counts segment 0
        }
        assertEquals(List.of(first), q.segmentNumbers(), "the rotation came before the second segment");
        while (q.segmentNumbers().size() < 2) {
            ids.add(q.append(null, payload(seq++)));
        }
        q.whenDurable(ids.get(ids.size() - 1)).get(10, TimeUnit.SECONDS);
        long straggler = ids.get(7);
        long[] others = ids.stream().mapToLong(Long::longValue).filter(id -> (int) (id >>> 32) == first && id != straggler).toArray();
        q.ackAll(others, others.length);
        until("the straggler's segment is reclaimed and its pass over", () -> !q.segmentNumbers().contains(first) && passOver(data));
        assertEquals(1, q.stats().relocatedMessages());
        q.whenDurable(q.writtenIndex()).get(10, TimeUnit.SECONDS);

        Path image = temp.resolve("image");
        disk.build(image);
        Path queue = image.resolve("queues/q");
        assertFalse(Files.exists(queue.resolve("segments").resolve(SegmentFiles.fileName(first))), "the source's rename is on the disk");
        AckCheckpoint.Loaded loaded = AckCheckpoint.read(queue.resolve("acks").resolve(AckFiles.CHECKPOINT));
        assertEquals(first, loaded.tracker().highestKnownSegment(), "the checkpoint knows the source, not the copy's segment");
        List<Integer> reclaimed = new ArrayList<>();
        AckJournal.replay(queue.resolve("acks").resolve(AckFiles.JOURNAL), loaded.generation(),
                AckJournal.Visitor.segmentsReclaimed(reclaimed::add));
        assertEquals(List.of(), reclaimed, "the source's SEGMENT_RECLAIMED record is not on the disk");

        MessageStore recovered = MessageStore.open(image, config());
        open.add(recovered);
        List<Long> live = new ArrayList<>(ids);
        live.removeIf(id -> (int) (id >>> 32) == first && id != straggler);
        assertEachExactlyOnce(live, readAll(recovered.queue("q")));
    }

    @Test
    void aCopyWhoseRelocationTheJournalLostIsAdoptedOnceItsSourceIsGone() throws Exception {
        for (boolean rollAfter : new boolean[] {false, true}) {
            Scenario s = relocateAStraggler("data-" + rollAfter, rollAfter);
            Path image = temp.resolve("legacy-image-" + rollAfter);
            // The disk a store without rule R4 could leave: the source gone, the copy forced, and the
            // journal as it was before the relocation (the acks of segment 0 were lost with it).
            s.disk().build(image, Map.of("q", s.journalForcesBefore() - 1));
            closeAll();
            open.clear();

            MessageStore recovered = MessageStore.open(image, config());
            open.add(recovered);
            QueueStore q = recovered.queue("q");
            assertEachExactlyOnce(s.ids(), readAll(q));
            assertEquals(AckResult.NEWLY_ACKED, q.ack(s.straggler()), "rollAfter " + rollAfter + ": the adopted copy can be acknowledged");
            recovered.close();
            open.clear();

            MessageStore again = MessageStore.open(image, config());
            open.add(again);
            List<Long> expected = new ArrayList<>(s.ids());
            expected.remove(s.straggler());
            assertEachExactlyOnce(expected, readAll(again.queue("q")));
            again.close();
            open.clear();
        }
    }

    @Test
    void aReclaimPassResolvesAnOrphanCopyBeforeCopyingItAgain() throws Exception {
        Scenario s = relocateAStraggler("data", true);
        Path image = temp.resolve("legacy-image");
        s.disk().build(image, Map.of("q", s.journalForcesBefore() - 1));
        closeAll();
        open.clear();

        MessageStore recovered = MessageStore.open(image, config());
        open.add(recovered);
        QueueStore q = recovered.queue("q");
        q.producerStateCoveredThrough(Long.MAX_VALUE); // reopened without a producer checkpoint: nothing to hold back for (R6)
        int copySegment = q.segmentNumbers().get(0);
        long[] others = s.ids().stream().mapToLong(Long::longValue)
                .filter(id -> (int) (id >>> 32) == copySegment && id != s.straggler()).toArray();
        q.ackAll(others, others.length); // leaves the orphan copy the only live message of its sealed segment
        until("the orphan's segment is reclaimed", () -> !q.segmentNumbers().contains(copySegment));
        assertEquals(1, q.stats().relocatedMessages(), "one copy: the orphan was adopted, then relocated once");
        List<Long> expected = new ArrayList<>(s.ids());
        expected.removeIf(id -> (int) (id >>> 32) == copySegment && id != s.straggler());
        assertEachExactlyOnce(expected, readAll(q));
        assertEquals(AckResult.NEWLY_ACKED, q.ack(s.straggler()));
    }

    /**
     * Refuses every force of a segment file, Chronicle's metadata file or the segment directory while
     * {@link #refusing}, as a force's open does when the process is out of descriptors; with
     * {@link #failOnce}, fails the next force of a segment file with EIO instead, once, as the kernel
     * reports a writeback error: a retry on that file then succeeds, and what it was to write stays lost
     * (the image keeps the file as of its last force before the failure).
     */
    private static final class RefusingForcer implements FileForcer {
        private final ForcedDiskImage disk;
        volatile boolean refusing;
        volatile boolean failOnce;
        private volatile Path failed;
        final AtomicInteger refusals = new AtomicInteger();

        RefusingForcer(ForcedDiskImage disk) {
            this.disk = disk;
        }

        private void refuseIfHeld(Path file) throws IOException {
            if (refusing && file.toString().contains("/segments")) {
                refusals.incrementAndGet();
                throw FileDescriptors.exhaustedError("cannot open " + file,
                        new FileSystemException(file.toString(), null, "Too many open files"));
            }
            if (failOnce && file.toString().endsWith(".cq4")) {
                failOnce = false;
                failed = file;
                throw new IOException("Input/output error (injected)");
            }
        }

        @Override
        public void force(FileChannel channel, Path file) throws IOException {
            refuseIfHeld(file);
            if (file.equals(failed)) {
                return; // "fsyncgate": the retry succeeds, the pages were marked clean, the data never reaches the disk
            }
            disk.force(channel, file);
        }

        @Override
        public void forceDirectory(FileChannel channel, Path directory) throws IOException {
            refuseIfHeld(directory);
            disk.forceDirectory(channel, directory);
        }

        @Override
        public void forcingMapped(Path file) {
            disk.forcingMapped(file);
        }
    }

    /**
     * A store watched by a {@link RefusingForcer} over a {@link ForcedDiskImage}, with {@code segments} - 1
     * segments full and the last begun, everything appended durable; message 7 of segment 0 is the straggler.
     */
    private record Straggled(Path data, ForcedDiskImage disk, RefusingForcer forcer, QueueStore queue, List<Long> ids, int first,
                             long straggler, long[] others) {
    }

    private Straggled straggled(int segments, DurabilityMode mode) throws Exception {
        return straggled(segments, config(mode));
    }

    private Straggled straggled(int segments, StoreConfig config) throws Exception {
        Path data = temp.resolve("data");
        ForcedDiskImage disk = new ForcedDiskImage(data);
        RefusingForcer forcer = new RefusingForcer(disk);
        MessageStore store = MessageStore.open(data, config, forcer);
        open.add(store);
        QueueStore q = store.createQueue("q");
        List<Long> ids = new ArrayList<>();
        long seq = 0;
        while (q.segmentNumbers().size() < segments) {
            ids.add(q.append(null, payload(seq++)));
        }
        q.whenDurable(ids.get(ids.size() - 1)).get(10, TimeUnit.SECONDS);
        int first = q.segmentNumbers().get(0);
        long straggler = ids.get(7);
        long[] others = ids.stream().mapToLong(Long::longValue).filter(id -> (int) (id >>> 32) == first && id != straggler).toArray();
        return new Straggled(data, disk, forcer, q, ids, first, straggler, others);
    }

    /** Acknowledges all of segment 0 but the straggler while the forcer refuses, and waits until the copy's force was refused. */
    private static void relocateWhileRefused(Straggled s) throws InterruptedException {
        s.forcer().refusing = true;
        s.queue().ackAll(s.others(), s.others().length);
        until("the straggler was copied and the copy's force refused",
                () -> s.queue().stats().relocatedMessages() == 1 && s.forcer().refusals.get() > 0);
    }

    /**
     * Under {@code never} and {@code interval} (with a long interval) nothing but rule R4 forces the copy,
     * so a source deleted without its forces leaves a machine crash without the straggler at all.
     */
    @ParameterizedTest
    @EnumSource(value = DurabilityMode.class, names = {"NEVER", "INTERVAL"})
    void aSourceWhoseRelocationForceWasRefusedStaysUntilALaterPassForcedItsCopies(DurabilityMode mode) throws Exception {
        Straggled s = straggled(2, mode);
        QueueStore q = s.queue();
        RefusingForcer forcer = s.forcer();
        int first = s.first();
        long straggler = s.straggler();
        relocateWhileRefused(s);
        until("the source is deleted, or its forces are tried again",
                () -> !q.segmentNumbers().contains(first) || forcer.refusals.get() > 1);
        boolean deletedWhileRefused = !q.segmentNumbers().contains(first);

        forcer.refusing = false; // descriptors are free again
        until("the source is deleted and its pass over", () -> !q.segmentNumbers().contains(first) && passOver(s.data()));
        Path image = temp.resolve("image");
        s.disk().build(image);
        MessageStore recovered = MessageStore.open(image, config(mode));
        open.add(recovered);
        List<Long> read = readAll(recovered.queue("q"));
        assertEquals(read.size(), new HashSet<>(read).size(), "a message was read twice: " + read);
        assertTrue(read.contains(straggler), mode + ": the relocated straggler 0x" + Long.toHexString(straggler)
                + " is lost after a machine crash that followed its source's deletion; read back " + read.size() + " messages");
        assertFalse(deletedWhileRefused, mode + ": the source was deleted while its copy's forces were refused");
        assertEquals(1, q.stats().relocatedMessages(), "one copy: the retry forced it, it did not copy again");
    }

    /**
     * A relocation's force that fails (EIO) fails the queue (rule "a failed force is final"). A retry of it
     * would succeed without the copy on disk, so the source must stay for good: it is the message. Plain
     * deletes of segments that consumers acknowledged go on.
     */
    @Test
    void aSourceWhoseRelocationForceFailedIsNeverDeleted() throws Exception {
        Straggled s = straggled(4, DurabilityMode.ALWAYS);
        QueueStore q = s.queue();
        RefusingForcer forcer = s.forcer();
        int first = s.first();
        long straggler = s.straggler();

        forcer.failOnce = true;
        q.ackAll(s.others(), s.others().length);
        until("the copy's force failed the queue", () -> q.failure() != null);
        // Two segments consumers acknowledge, one after the other: the pass deleting the second began after the
        // one deleting the first had ended, which came after the failure.
        for (int segment : List.of(q.segmentNumbers().get(1), q.segmentNumbers().get(2))) {
            long[] acked = s.ids().stream().mapToLong(Long::longValue).filter(id -> (int) (id >>> 32) == segment).toArray();
            q.ackAll(acked, acked.length);
            until("a later pass deleted segment " + segment + ", which consumers acknowledged",
                    () -> !q.segmentNumbers().contains(segment) && noDeletePending(s.data()));
        }
        boolean sourceDeleted = !q.segmentNumbers().contains(first);

        Path image = temp.resolve("image");
        s.disk().build(image);
        MessageStore recovered = MessageStore.open(image, config());
        open.add(recovered);
        List<Long> read = readAll(recovered.queue("q"));
        assertTrue(read.contains(straggler), "the straggler 0x" + Long.toHexString(straggler) + " whose copy's force failed is lost "
                + "after a machine crash: its source was deleted; read back " + read.size() + " messages");
        assertFalse(sourceDeleted, "the source was deleted after its copy's force failed");
    }

    /**
     * Rule "a lost copy gives its message back" (docs/storage.md, "Reclaim"): the copy's RELOCATED record reaches the
     * disk only after the copy (R4), but a journal rotation in between folds the relocation into a checkpoint, fsynced at
     * once. A machine crash then left the source slot acknowledged in the checkpoint and the copy lost; the straggler,
     * still on disk in its source, was never delivered again.
     */
    @Test
    void aStragglerWhoseUnforcedRelocationARotationCheckpointedSurvivesAMachineCrash() throws Exception {
        Straggled s = straggled(2, config(DurabilityMode.ALWAYS, 4096)); // the journal rotates after about 200 records
        QueueStore q = s.queue();
        relocateWhileRefused(s); // the copy is in the page cache only
        Path checkpoint = s.data().resolve("queues/q/acks").resolve(AckFiles.CHECKPOINT);
        long generation = AckCheckpoint.read(checkpoint).generation();
        long other = s.ids().get(s.ids().size() - 1);
        for (int count = 1; AckCheckpoint.read(checkpoint).generation() == generation; count++) {
            q.recordDelivery(other, count); // fills the journal until it rotates: the checkpoint holds the relocation
        }
        q.whenAcksDurable(true).get(10, TimeUnit.SECONDS);
        assertTrue(q.segmentNumbers().contains(s.first()), "the source stays while its copy is unforced (R4)");

        Path image = temp.resolve("image");
        s.disk().build(image);
        s.forcer().refusing = false;
        MessageStore recovered = MessageStore.open(image, config());
        open.add(recovered);
        QueueStore r = recovered.queue("q");
        List<Long> expected = new ArrayList<>(s.ids());
        for (long id : s.others()) {
            expected.remove(id);
        }
        List<Long> read = readAll(r);
        assertTrue(read.contains(s.straggler()), "the straggler 0x" + Long.toHexString(s.straggler()) + ", whose copy a machine "
                + "crash lost after a checkpoint recorded its relocation, is never delivered again; read back " + read.size());
        assertEachExactlyOnce(expected, read);
        assertEquals(AckResult.NEWLY_ACKED, r.ack(s.straggler()), "the recovered straggler can be acknowledged");
    }

    /**
     * The same rule across a restart: a store stopped (closed here; a kill leaves the same files) while its
     * copies waited for their forces leaves the relocation intent, and the copies only in the page cache.
     * The store opened next must force them before a pass deletes their source, which its ack state shows
     * fully acknowledged. The image is built from the forces of both stores (one disk, one watcher).
     */
    @Test
    void copiesAStoppedStoreLeftUnforcedAreForcedBeforeTheNextStoreDeletesTheirSource() throws Exception {
        Straggled s = straggled(2, DurabilityMode.NEVER);
        relocateWhileRefused(s);
        open.remove(open.size() - 1).close();

        s.forcer().refusing = false;
        MessageStore reopened = MessageStore.open(s.data(), config(DurabilityMode.NEVER), s.forcer());
        open.add(reopened);
        QueueStore again = reopened.queue("q");
        again.producerStateCoveredThrough(Long.MAX_VALUE); // reopened without a producer checkpoint: nothing to hold back for (R6)
        until("the source is deleted", () -> !again.segmentNumbers().contains(s.first()) && passOver(s.data()));
        Path image = temp.resolve("image");
        s.disk().build(image);
        MessageStore recovered = MessageStore.open(image, config(DurabilityMode.NEVER));
        open.add(recovered);
        List<Long> read = readAll(recovered.queue("q"));
        assertTrue(read.contains(s.straggler()), "the relocated straggler 0x" + Long.toHexString(s.straggler()) + " is lost after a machine "
                + "crash that followed its source's deletion by the next store; read back " + read.size() + " messages");
    }
}
