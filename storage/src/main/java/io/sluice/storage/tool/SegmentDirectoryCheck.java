package io.sluice.storage.tool;

import io.sluice.storage.ack.AckStateReader;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.SegmentFiles.FirstHeader;

import java.io.IOException;
import java.io.UncheckedIOException;
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
 * its own: {@link SegmentScan} keeps such files out of its sight, and they are reported here instead. Not thread-safe.
 */
final class SegmentDirectoryCheck {
    private final Path segmentDirectory;
    private final TreeMap<Integer, Long> listed;
    private final TreeMap<Integer, FirstHeader> unreadable = new TreeMap<>();

    private SegmentDirectoryCheck(Path segmentDirectory, TreeMap<Integer, Long> listed) {
        this.segmentDirectory = segmentDirectory;
        this.listed = listed;
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
        return check;
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
}
