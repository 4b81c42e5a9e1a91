package io.sluice.storage.tool;

import io.sluice.storage.QueueIncarnation;
import io.sluice.storage.ack.AckFiles;
import io.sluice.storage.dedup.CorruptProducerStateException;
import io.sluice.storage.dedup.ProducerCheckpoint;
import io.sluice.storage.durability.ForcedMark;
import io.sluice.storage.files.ChecksummedFields;
import io.sluice.storage.segment.RecordCodec;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.SegmentRollCycle;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * {@code verify}: reads every record of every queue, checks its checksum and counts it, and checks
 * the ack state files (see {@link AckSnapshot}). Prints a report and says whether damage was found.
 * Not thread-safe; one use per run.
 *
 * <p>Damage: a record failing {@code RecordCodec.loaded}, an ack checkpoint or journal header that
 * does not check out, a producer checkpoint that does not read, a forced mark that does not check out (but an empty or
 * zero-filled one, only noted), a segment whose index counts a last record that is not in the file, a segment whose
 * records cannot be read to their end (the scan reports it where it stops and goes on with the next), a segment file
 * Chronicle cannot read ({@link SegmentDirectoryCheck}; the last one with no header yet only noted), a {@code segments} or
 * {@code acks} that is not a directory or an ack file that is not a regular file, a sealed segment's tally, a relocation
 * intent or the data directory's clean-shutdown mark that the broker would not have written or would believe wrongly
 * ({@link HintFiles}: those a crash or a running broker leaves are only noted), or a queue that cannot be read at all
 * (its segments not listed, a file's size not read: that queue's damage, the run goes on). Not damage, only noted: a journal whose replay stops at a torn record
 * (normal after a crash), a segment whose record count differs from Chronicle's index while the last record it counts
 * reads (a broker appending while the tool runs), a segment file removed between the listing and the reading of
 * its size (a broker reclaiming it), and a last segment whose records missing all lie after the forced mark, which the
 * broker cuts back at its next start (rule "an unforced tail is cut back").
 */
final class StoreVerifier {
    /** The page size of the systems the broker runs on; Chronicle's files are whole chunks of mapping, themselves whole pages. */
    private static final long PAGE_BYTES = 4096;
    private final PrintStream out;
    private final Progress progress;
    private int damagedQueues;

    StoreVerifier(PrintStream out, Progress progress) {
        this.out = out;
        this.progress = progress;
    }

    /** Returns true if every queue, and the data directory's own files, are clean. */
    boolean verify(Path dataDirectory, List<String> queueNames) {
        progress.done();
        out.printf("Verifying %s: %d queue(s)%n", dataDirectory, queueNames.size());
        List<String> damage = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        HintFiles.checkCleanShutdown(dataDirectory, damage, notes);
        print(notes, damage);
        for (int i = 0; i < queueNames.size(); i++) {
            String name = queueNames.get(i);
            verifyQueue(name, dataDirectory.resolve("queues").resolve(name),
                    "verify of queue '" + name + "' (" + (i + 1) + " of " + queueNames.size() + ")");
            StorageTool.checkOutput(out);
        }
        if (damagedQueues == 0 && damage.isEmpty()) {
            out.println("Result: CLEAN");
        } else {
            out.printf("Result: DAMAGED (%s%d of %d queue(s))%n", damage.isEmpty() ? "" : "the data directory, and ",
                    damagedQueues, queueNames.size());
        }
        return damagedQueues == 0 && damage.isEmpty();
    }

    private void print(List<String> notes, List<String> damage) {
        for (String note : notes) {
            out.println("  NOTE " + note);
        }
        for (String d : damage) {
            out.println("  DAMAGE " + d);
        }
    }

    /**
     * The segment files of {@code segments} whose size is not a whole number of pages, each as a sentence. Chronicle
     * lengthens a file to whole chunks of its mapping as it writes, so such a file was cut short (a mapped read past
     * its end faults); none if the listing fails.
     */
    static List<String> filesCutOffThePage(Path segments) {
        List<String> cut = new ArrayList<>();
        try (var listing = Files.list(segments)) {
            for (Path file : (Iterable<Path>) listing.sorted()::iterator) {
                if (SegmentFiles.segmentOf(file.getFileName().toString()) >= 0 && Files.isRegularFile(file)
                        && Files.size(file) % PAGE_BYTES != 0) {
                    cut.add(String.format("segment file %s is cut short: it holds %d bytes, not a whole number of %d-byte"
                            + " pages as Chronicle leaves its files", file, Files.size(file), PAGE_BYTES));
                }
            }
        } catch (IOException | RuntimeException e) {
            return cut;
        }
        return cut;
    }

    private static String describe(Throwable e) {
        String message = e.getMessage() == null ? "" : ": " + e.getMessage();
        String kind = e instanceof InternalError ? "a mapped read faulted (the file is shorter than its mapping, or a page has"
                + " no disk block)" : e.getClass().getSimpleName();
        return kind + message;
    }

    /** What the scan read of one segment. */
    static final class SegmentFigures {
        long records;
        long corrupt;
        /** Each record's length less its header, as the broker's tally counts them. */
        long messageBytes;
        /** Records a transaction staged, among those that check out. */
        long staged;
        /** The sequence of the segment's first corrupt record, -1 if none. */
        long firstCorrupt = -1;
    }

    private void verifyQueue(String name, Path queueDirectory, String phase) {
        out.printf("%nQueue '%s' (%s)%n", name, queueDirectory);
        out.flush(); // before a progress line on the same terminal
        List<String> damage = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        TreeMap<Integer, SegmentFigures> figures = new TreeMap<>();
        TreeMap<Integer, Long> files;
        Map<Integer, Long> indexed;
        AckSnapshot acks;
        Map<Integer, Long> lastIndexedMissing;
        Set<Integer> faulted;
        long[] records = {0};
        Path segments = queueDirectory.resolve("segments");
        // In the queue's try: a listing, a size or a header that fails to read is this queue's damage, not the end of the run.
        try (SegmentScan scan = SegmentScan.open(queueDirectory, gone -> notes.add(
                gone + " was removed while verify ran (a broker reclaiming it, or deleting the queue)"))) {
            files = scan.files().listed();
            indexed = scan.indexedCounts();
            scan.scan(-1, (index, segment, sequence, codec, problem) -> {
                SegmentFigures f = figures.computeIfAbsent(segment, s -> new SegmentFigures());
                f.records++;
                f.messageBytes += Math.max(0, codec.length() - RecordCodec.HEADER_BYTES);
                f.staged += problem == null && codec.transactional() ? 1 : 0;
                progress.show(phase, records[0]++);
                if (problem != null) {
                    f.corrupt++;
                    f.firstCorrupt = f.firstCorrupt < 0 ? sequence : f.firstCorrupt;
                    damage.add(String.format("corrupt record in %s index %d (id 0x%x, segment %d seq %d): %s",
                            scan.segmentDirectory().resolve(SegmentFiles.fileName(segment)), index, index, segment,
                            sequence, problem));
                }
                return true;
            }, damage::add);
            for (int segment : scan.segmentsWithoutEndMarker()) {
                notes.add(String.format("segment %d: %s has no end marker after its last record (a machine crash kept its"
                        + " records and the next segment's, not the marker its roll wrote): Chronicle's readers stop at its end"
                        + " until the broker's next start writes it; this scan went on past it", segment,
                        segments.resolve(SegmentFiles.fileName(segment))));
            }
            faulted = Set.copyOf(scan.faultedSegments());
            lastIndexedMissing = lastIndexedRecordsMissing(scan, indexed, figures);
            acks = AckSnapshot.load(queueDirectory, indexed, files.keySet(), scan.damagedSegments());
            scan.report(acks.state(), damage, notes);
        } catch (IOException | RuntimeException | InternalError e) {
            // InternalError: a SIGBUS on a mapped page (a file cut short, or a page the disk has no block for).
            damagedQueues++;
            progress.done();
            out.printf("  DAMAGE queue cannot be read: %s%n", describe(e));
            if (e instanceof InternalError) {
                // The JVM may raise a fault of a read in compiled code at a later safepoint, out of the try that knows
                // the file: the files a fault can come from are named by their size.
                for (String cut : filesCutOffThePage(segments)) {
                    out.printf("  DAMAGE %s%n", cut);
                }
            }
            return;
        }
        progress.done();
        out.printf("  %-8s %-22s %12s %10s %10s %8s%n", "segment", "file", "bytes", "messages", "unacked", "corrupt");
        long totalMessages = 0;
        long totalCorrupt = 0;
        for (Map.Entry<Integer, Long> file : files.entrySet()) {
            int segment = file.getKey();
            SegmentFigures f = figures.getOrDefault(segment, new SegmentFigures());
            String unacked = acks.state() == null ? "?" : Long.toString(acks.state().unackedCount(segment));
            out.printf("  %-8d %-22s %12d %10d %10s %8d%n", segment, SegmentFiles.fileName(segment), file.getValue(),
                    f.records, unacked, f.corrupt);
            totalMessages += f.records;
            totalCorrupt += f.corrupt;
            long index = indexed.getOrDefault(segment, 0L);
            if (faulted.contains(segment)) {
                // Nothing more: the scan's DAMAGE line says from which record on it could not read, and what the index
                // counts past there is not the file's (a broker appending does not explain it)
            } else if (lastIndexedMissing.containsKey(segment) && segment == files.lastKey()
                    && unforcedTailOnly(queueDirectory, segment, f)) {
                notes.add(String.format("segment %d: %s: unforced tail lost in a crash: Chronicle's index counts %d records, the"
                        + " file holds the first %d, every record through the forced mark among them; %d records will be cut back"
                        + " at the next start (never forced, so never confirmed)", segment,
                        segments.resolve(SegmentFiles.fileName(segment)), index, f.records, index - f.records));
            } else if (lastIndexedMissing.containsKey(segment)) {
                damage.add(String.format("segment %d: %s: Chronicle's index counts %d records, the scan read %d, and the last of"
                        + " them, id 0x%x, is not in the file (cut short, or zeros where records were); a broker refuses to open"
                        + " the queue", segment, segments.resolve(SegmentFiles.fileName(segment)), index, f.records,
                        lastIndexedMissing.get(segment)));
            } else if (index != f.records) {
                notes.add("segment " + segment + ": Chronicle's index counts " + index + " records, the scan read "
                        + f.records + " (a broker appending during the run explains this)");
            }
        }
        acks.missingUnacked().forEach((segment, count) -> damage.add(String.format("segment %d: %s is gone, and the ack state"
                + " counts %d unacknowledged messages in it; a broker refuses to open the queue", segment,
                segments.resolve(SegmentFiles.fileName(segment)), count)));
        String unackedTotal = acks.state() == null ? "?" : Long.toString(acks.state().unackedCount());
        out.printf("  total: %d segment(s), %d message(s), %s unacked, %d corrupt%n", files.size(), totalMessages,
                unackedTotal, totalCorrupt);
        if (acks.checkpointGeneration() >= 0) {
            out.printf("  ack checkpoint: generation %d, CRC32C %s%n", acks.checkpointGeneration(),
                    acks.damage() == null ? "ok" : "not checked out");
        } else {
            out.println("  ack checkpoint: none");
        }
        out.printf("  ack journal: %d intact record(s), replay stopped at %s%n", acks.journalRecords(), acks.journalStop());
        if (acks.damage() != null) {
            damage.add("ack state: " + acks.damage());
        }
        if (acks.journalDamage() != null) {
            damage.add("ack journal " + queueDirectory.resolve("acks").resolve(AckFiles.JOURNAL) + ": " + acks.journalDamage()
                    + " (a broker replays its records and writes a new journal at its next start)");
        }
        checkForcedMark(queueDirectory, damage, notes);
        HintFiles.checkTallies(segments, files, indexed, figures, damage, notes);
        HintFiles.checkRelocationIntent(queueDirectory, damage, notes);
        checkProducerCheckpoint(queueDirectory, damage);
        String incarnation = QueueIncarnation.damage(queueDirectory);
        if (incarnation != null) {
            damage.add(incarnation);
        }
        if (acks.journalStop().contains("CRC32C") || acks.journalStop().contains("unknown record type")) {
            notes.add("the ack journal ends in a torn record; normal after a crash, the acks after it are lost");
        }
        print(notes, damage);
        if (!damage.isEmpty()) {
            damagedQueues++;
        }
    }

    /**
     * The forced mark is a hint the broker checks before it believes it, but a file of it that does not check out is not
     * what the broker writes: its stores are whole 44-byte marks. Only an empty or zero-filled one is what a machine
     * crash leaves (its block reached the disk, its data did not: the mark is never forced).
     */
    private static void checkForcedMark(Path queueDirectory, List<String> damage, List<String> notes) {
        Path file = queueDirectory.resolve(ForcedMark.FILE);
        try {
            ChecksummedFields.Problem problem = ForcedMark.problem(queueDirectory);
            if (problem != null && problem.blank()) {
                notes.add("forced mark " + file + ": " + problem.description() + " (a machine crash kept its name, not its"
                        + " data); the broker checks the whole last segment at its next start");
            } else if (problem != null && problem.checksumOnly()) {
                // The broker rewrites the mark in place through a mapping at every force: read beside a running broker,
                // or torn by a machine crash, it can fail its checksum with nothing wrong. The broker ignores it.
                notes.add("forced mark " + file + ": " + problem.description() + " (read as the broker rewrote it, or torn"
                        + " by a machine crash); the broker ignores it and checks the whole last segment at its next start");
            } else if (problem != null) {
                damage.add("forced mark " + file + " does not check out: " + problem.description() + "; the broker ignores"
                        + " it and checks the whole last segment at its next start");
            }
        } catch (IOException e) {
            damage.add("forced mark " + file + " cannot be read: " + e);
        }
    }

    /** A producer checkpoint is written whole (temporary file, fsync, rename): one that does not read is damage. */
    private static void checkProducerCheckpoint(Path queueDirectory, List<String> damage) {
        try {
            ProducerCheckpoint.read(queueDirectory);
        } catch (CorruptProducerStateException e) {
            damage.add(e.getMessage() + "; the broker sets it aside at its next start and rebuilds the producer state from"
                    + " the stored records alone, so a resend of a message already reclaimed would be stored again");
        } catch (IOException e) {
            damage.add("producer state file " + ProducerCheckpoint.file(queueDirectory) + " cannot be read: " + e);
        }
    }

    /**
     * Rule "an unforced tail is cut back" (docs/storage.md, "Recovery"), as the broker's recovery applies it to the last
     * segment: the forced mark names this file, and every record through it was read and checks out, so all that is
     * missing was never forced.
     */
    private static boolean unforcedTailOnly(Path queueDirectory, int segment, SegmentFigures f) {
        ForcedMark.Mark mark = ForcedMark.readFor(queueDirectory, segment,
                SegmentFiles.file(queueDirectory.resolve("segments"), segment));
        if (mark == null) {
            return false;
        }
        long forcedSequence = SegmentRollCycle.INSTANCE.toSequenceNumber(mark.index());
        return f.records > forcedSequence && (f.firstCorrupt < 0 || f.firstCorrupt > forcedSequence);
    }

    /**
     * Per segment whose index counts more records than the scan read, the id of the last record it counts if that record
     * cannot be read. A broker appending beside the tool indexes a record only once it is written, so there it reads;
     * where it does not, the index counts records whose bytes are gone, which the broker's recovery refuses for the last
     * segment (rule "what the index counts is there", docs/storage.md).
     */
    private static Map<Integer, Long> lastIndexedRecordsMissing(SegmentScan scan, Map<Integer, Long> indexed,
                                                                 Map<Integer, SegmentFigures> figures) {
        Map<Integer, Long> missing = new TreeMap<>();
        for (Map.Entry<Integer, Long> counted : indexed.entrySet()) {
            int segment = counted.getKey();
            SegmentFigures f = figures.get(segment);
            long read = f == null ? 0 : f.records;
            if (counted.getValue() > read) {
                long lastId = SegmentRollCycle.INSTANCE.toIndex(segment, counted.getValue() - 1);
                if (!scan.readable(lastId)) {
                    missing.put(segment, lastId);
                }
            }
        }
        return missing;
    }

    /** Queue directories under {@code <data>/queues}, sorted, skipping ones being deleted. */
    static List<String> queueNames(Path dataDirectory) {
        List<String> names = new ArrayList<>();
        try (var list = Files.list(dataDirectory.resolve("queues"))) {
            list.filter(Files::isDirectory)
                    .map(p -> p.getFileName().toString())
                    .filter(n -> !n.contains(".deleted-"))
                    .sorted()
                    .forEach(names::add);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + dataDirectory.resolve("queues"), e);
        }
        return names;
    }
}
