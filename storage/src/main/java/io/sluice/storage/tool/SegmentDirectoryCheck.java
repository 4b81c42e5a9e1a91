package io.sluice.storage.tool;

import io.sluice.storage.ack.AckStateReader;
import io.sluice.storage.durability.SegmentSyncer;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.SegmentFiles.FirstHeader;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * A queue's segment files as the tool finds them before Chronicle reads any: which of them Chronicle can read, and why
 * not the others. Chronicle waits out its timeout (10 s) at every look at a segment whose first header was never
 * completed and then takes it for a segment that is not there, and stops every read that reaches one whose header is not
 * its own: {@link SegmentScan} keeps such files out of its sight, and they are reported here instead; so is Chronicle's
 * metadata file ({@link #metadataReadable}). Not thread-safe.
 */
final class SegmentDirectoryCheck {
    private final Path segmentDirectory;
    private final TreeMap<Integer, Long> listed;
    private final TreeMap<Integer, FirstHeader> unreadable = new TreeMap<>();
    private final Path metadata;
    /** The first header of Chronicle's metadata file; null if the file is missing or not a regular file. */
    private FirstHeader metadataHeader;

    private SegmentDirectoryCheck(Path segmentDirectory, TreeMap<Integer, Long> listed) {
        this.segmentDirectory = segmentDirectory;
        this.listed = listed;
        this.metadata = segmentDirectory.resolve(SegmentSyncer.METADATA_FILE);
    }

    /**
     * Lists the segment files of {@code segmentDirectory} and reads each one's first header; a file gone meanwhile goes to
     * {@code vanished}, as in {@link SegmentScan#segmentFiles(Path, Consumer)}, and any other failure to read one throws
     * {@link UncheckedIOException} naming it.
     */
    static SegmentDirectoryCheck of(Path segmentDirectory, Consumer<Path> vanished) {
        SegmentDirectoryCheck check = new SegmentDirectoryCheck(segmentDirectory, SegmentScan.segmentFiles(segmentDirectory, vanished));
        for (int segment : List.copyOf(check.listed.keySet())) {
            Path file = SegmentFiles.file(segmentDirectory, segment);
            try {
                FirstHeader header = FirstHeader.read(file);
                if (!header.accepted()) {
                    check.unreadable.put(segment, header);
                }
            } catch (NoSuchFileException e) {
                check.listed.remove(segment);
                vanished.accept(file);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read the first header of " + file, e);
            }
        }
        if (Files.isRegularFile(check.metadata)) {
            try {
                check.metadataHeader = FirstHeader.read(check.metadata);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read the first header of " + check.metadata, e);
            }
        }
        return check;
    }

    /**
     * True if Chronicle's metadata file is one it reads. Given any other, Chronicle waits out its timeout (10 s) and fails
     * with "Unable to claim exclusive shared lock" or, the file shorter than its header, logs its fallback to a metadata
     * of its own with a stack trace and reads on; a missing one it also logs. The tool's own view has one of its own.
     */
    boolean metadataReadable() {
        return metadataHeader != null && metadataHeader.accepted();
    }

    /** Every segment file found, with its size, in segment order. */
    TreeMap<Integer, Long> listed() {
        return listed;
    }

    /** The segments Chronicle can read: those whose first header it accepts. */
    NavigableSet<Integer> readable() {
        NavigableSet<Integer> readable = new TreeSet<>(listed.keySet());
        readable.removeAll(unreadable.keySet());
        return readable;
    }

    /** True if every segment file found is one Chronicle can read. */
    boolean allReadable() {
        return unreadable.isEmpty();
    }

    /** The segments whose files are there and Chronicle cannot read. */
    NavigableSet<Integer> unreadable() {
        return unreadable.navigableKeySet();
    }

    /**
     * One sentence per segment file Chronicle cannot read, naming it, into {@code damage} or {@code notes}. The last file,
     * with no header yet, is what a broker beside the tool creating it shows, or a crash during its creation left: it holds
     * no message, and the broker deletes it at its next start; only noted, unless {@code acks} counts unacknowledged
     * messages in it (rule "an emptied segment is not deleted": the broker refuses the queue). Any other is damage: the
     * records in it cannot be told apart without its header and index. {@code acks}: null if it could not be read.
     */
    void report(AckStateReader acks, List<String> damage, List<String> notes) {
        reportMetadata(damage, notes);
        for (Map.Entry<Integer, FirstHeader> entry : unreadable.entrySet()) {
            int segment = entry.getKey();
            FirstHeader header = entry.getValue();
            boolean last = segment == listed.lastKey();
            long unacknowledged = acks == null ? 0 : acks.unackedCount(segment);
            String file = "segment " + segment + ": " + SegmentFiles.file(segmentDirectory, segment) + " " + header.describe();
            if (last && header.neverCompleted() && unacknowledged == 0) {
                notes.add(file + ": it holds no records (a file a broker was creating during the run, or one a crash left during"
                        + " its creation, which the broker deletes at its next start)");
                continue;
            }
            damage.add(file + (header.neverCompleted() && !last ? ", though later segments follow" : "")
                    + ": none of its records can be read" + (acks == null ? ""
                    : unacknowledged > 0 ? ", and the ack state counts " + unacknowledged + " unacknowledged messages in it"
                    : " (the ack state counts no unacknowledged message in it)")
                    + "; a broker refuses to open the queue");
        }
    }

    /**
     * Chronicle's metadata file, in a queue with segments: a broker refuses the queue if it is there and not one Chronicle
     * reads ({@code SegmentLog}), and makes a new one if it is missing. In a queue without segments, one with no header
     * yet is what a crash while Chronicle created it leaves, and the broker deletes it.
     */
    private void reportMetadata(List<String> damage, List<String> notes) {
        String file = "Chronicle's metadata file " + metadata;
        if (Files.exists(metadata) && metadataHeader == null) {
            damage.add(file + " is not a regular file: a broker refuses to open the queue");
        } else if (metadataHeader == null && !listed.isEmpty()) {
            notes.add(file + " is missing: the broker makes a new one at its next start");
        } else if (metadataHeader != null && listed.isEmpty() && metadataHeader.neverCompleted()) {
            notes.add(file + " " + metadataHeader.describe() + ": the queue has no segment, and the broker makes the file again"
                    + " at its next start");
        } else if (metadataHeader != null && !metadataHeader.accepted()) {
            damage.add(file + " " + metadataHeader.describe() + ": a broker refuses to open the queue; the file holds no message"
                    + " (Chronicle's locks and its list of the segment files), and moved out of the segment directory it is made"
                    + " again at the next start");
        }
    }
}
