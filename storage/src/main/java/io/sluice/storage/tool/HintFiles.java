package io.sluice.storage.tool;

import io.sluice.storage.CleanShutdownMark;
import io.sluice.storage.StorageException;
import io.sluice.storage.files.ChecksummedFields;
import io.sluice.storage.reclaim.RelocationIntent;
import io.sluice.storage.segment.SegmentTallyFile;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.OptionalLong;

/**
 * For verify, the files a broker's open reads as hints or marks, read by the broker's own rules: a sealed segment's tally
 * (rule "a sealed segment's tally"), a queue's relocation intent (rule R5) and the data directory's clean-shutdown mark
 * (docs/storage.md, "Recovery"). A file the broker would not have written, or would believe with figures the segment
 * does not hold, is damage; what a crash, or a broker running beside the tool, leaves is noted; each sentence names the
 * file and says what the broker does with it. None of them decides what is delivered: the broker answers a bad one with
 * work (reading a segment, checking or forcing every segment), except the files it cannot read or remove at all.
 * Stateless.
 */
final class HintFiles {
    private static final String NEVER_FORCED = " (a machine crash kept its name, not its data: it is never forced)";
    private static final String READS_THE_SEGMENT = "; the broker reads the segment instead";
    private static final String CHECKS_EVERY_SEGMENT = "; the broker's next start checks every segment for relocated copies"
            + " (rule R5), then removes it";
    private static final String UNCLEAN_STOP = "; the broker takes the last stop for an unclean one and forces every segment"
            + " at its next start";

    private HintFiles() {
    }

    /**
     * The tallies of the sealed segments whose records Chronicle counts ({@code indexed}), those the broker's open reads:
     * the segment being written (the last of {@code listed}) is not sealed, and its seal replaces its tally. A tally that
     * checks out and counts Chronicle's records is believed, so its figures are compared with what the scan read
     * ({@code figures}) when the scan read every record of the segment and each checked out.
     */
    static void checkTallies(Path segmentDirectory, NavigableMap<Integer, Long> listed, Map<Integer, Long> indexed,
                             Map<Integer, StoreVerifier.SegmentFigures> figures, List<String> damage, List<String> notes) {
        for (Map.Entry<Integer, Long> counted : indexed.entrySet()) {
            int segment = counted.getKey();
            Path file = SegmentTallyFile.file(segmentDirectory, segment);
            if (listed.isEmpty() || segment >= listed.lastKey() || counted.getValue() == 0 || !Files.exists(file)) {
                continue;
            }
            String name = "segment " + segment + ": tally " + file;
            if (!Files.isRegularFile(file)) {
                damage.add(name + " is not a regular file: the broker cannot read it and reads the segment instead");
                continue;
            }
            ChecksummedFields.Problem problem;
            try {
                problem = SegmentTallyFile.problem(segmentDirectory, segment);
            } catch (IOException e) {
                damage.add(name + " cannot be read (" + e + ")" + READS_THE_SEGMENT);
                continue;
            }
            if (problem != null && problem.blank()) {
                notes.add(name + ": " + problem.description() + NEVER_FORCED + READS_THE_SEGMENT);
            } else if (problem != null) {
                damage.add(name + " does not check out: " + problem.description() + "; the broker ignores it and reads the"
                        + " segment instead");
            } else {
                compareTally(name, SegmentTallyFile.read(segmentDirectory, segment), counted.getValue(), figures.get(segment),
                        damage, notes);
            }
        }
    }

    private static void compareTally(String name, SegmentTallyFile.Tally tally, long counted, StoreVerifier.SegmentFigures read,
                                     List<String> damage, List<String> notes) {
        if (tally == null) {
            return; // removed since it was checked: a broker beside the tool reclaiming the segment
        }
        if (tally.records() != counted) {
            notes.add(name + " counts " + tally.records() + " records where Chronicle's index counts " + counted + " (a crash"
                    + " took records of the segment after its tally was written); the broker ignores it and reads the segment"
                    + " instead");
        } else if (read != null && read.records == counted && read.corrupt == 0
                && (tally.messageBytes() != read.messageBytes || tally.stagedRecords() != read.staged)) {
            damage.add(name + " counts " + tally.records() + " records, " + tally.messageBytes() + " message bytes and "
                    + tally.stagedRecords() + " staged, and the segment holds " + read.records + " records, "
                    + read.messageBytes + " message bytes and " + read.staged + " staged: the broker believes it (its"
                    + " checksum holds and its record count is Chronicle's) and takes its figures instead of reading the"
                    + " segment");
        }
    }

    /** The queue's relocation intent, read as the broker's recovery reads it ({@code QueueRecovery.scanStart}). */
    static void checkRelocationIntent(Path queueDirectory, List<String> damage, List<String> notes) {
        Path file = queueDirectory.resolve(RelocationIntent.FILE);
        if (!Files.exists(file)) {
            return;
        }
        String name = "relocation intent " + file;
        if (!Files.isRegularFile(file)) {
            // Recovery removes it after its check: a directory with entries cannot be removed, and the open fails.
            damage.add(name + " is not a regular file: the broker's next start cannot read it, checks every segment for"
                    + " relocated copies (rule R5), and refuses to open the queue if it cannot remove it");
            return;
        }
        try {
            RelocationIntent intent = new RelocationIntent(queueDirectory);
            ChecksummedFields.Problem problem = intent.problem();
            if (problem != null && problem.blank()) {
                notes.add(name + ": " + problem.description() + " (a crash during its write, before its force)"
                        + CHECKS_EVERY_SEGMENT);
            } else if (problem != null) {
                damage.add(name + " does not check out: " + problem.description() + CHECKS_EVERY_SEGMENT);
            } else {
                OptionalLong after = intent.read();
                after.ifPresent(id -> notes.add(String.format("%s: a relocation pass was under way (a broker beside the tool"
                        + " running it, or one stopped during it); the broker's next start checks the records after id 0x%x"
                        + " for relocated copies and forces their segments (rules R4, R5)", name, id)));
            }
        } catch (IOException | StorageException e) {
            damage.add(name + " cannot be read (" + e.getMessage() + ")" + CHECKS_EVERY_SEGMENT);
        }
    }

    /**
     * The data directory's clean-shutdown mark, read as the store's open reads it ({@link CleanShutdownMark#vouches}): one
     * that vouches for this directory is what a clean close leaves, and is not mentioned.
     */
    static void checkCleanShutdown(Path dataDirectory, List<String> damage, List<String> notes) {
        Path file = CleanShutdownMark.file(dataDirectory);
        if (!Files.exists(file)) {
            return; // a broker running, or stopped uncleanly: its next start forces every segment
        }
        String name = "clean-shutdown mark " + file;
        if (!Files.isRegularFile(file)) {
            damage.add(name + " is not a regular file: a broker cannot read it and refuses to open the store");
            return;
        }
        byte[] mark;
        String identity;
        try {
            mark = Files.readAllBytes(file);
            identity = CleanShutdownMark.identity(dataDirectory);
        } catch (IOException e) {
            damage.add(name + " cannot be read (" + e + "): a broker refuses to open the store");
            return;
        }
        if (CleanShutdownMark.vouches(mark, identity)) {
            return;
        }
        String text = new String(mark, StandardCharsets.ISO_8859_1);
        String lostData = " (a machine crash kept its name, not all of its data: it is never forced)";
        if (identity == null) {
            notes.add(name + ": the file system gives the directory of queues no identity, so the broker believes no mark"
                    + UNCLEAN_STOP);
        } else if (blank(mark)) {
            notes.add(name + ": " + (mark.length == 0 ? "it is empty" : "it holds only zeros") + lostData + UNCLEAN_STOP);
        } else if (identity.startsWith(text)) {
            notes.add(name + ": it is cut short" + lostData + UNCLEAN_STOP);
        } else if (text.matches("queues [\\x21-\\x7e][\\x20-\\x7e]*\n")) {
            notes.add(name + " names another directory of queues, " + text.substring(7).strip() + ", not this one, "
                    + identity.substring(7).strip() + ": this data directory is a copy, whose files may not be on disk yet;"
                    + " the broker forces every segment at its next start");
        } else {
            damage.add(name + " is not a mark the broker writes (" + mark.length + " bytes, not one line naming a directory"
                    + " of queues)" + UNCLEAN_STOP);
        }
    }

    private static boolean blank(byte[] bytes) {
        for (byte b : bytes) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }
}
