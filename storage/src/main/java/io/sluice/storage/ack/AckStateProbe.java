package io.sluice.storage.ack;

import io.sluice.storage.Directories;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.function.IntPredicate;

/**
 * What a recovery of a queue's ack state would say of one segment, before the queue's own recovery may change that
 * state: the checkpoint loaded and the journal replayed on a private copy of the two files, beside them, which is
 * deleted afterwards (recovering in place ends in a checkpoint that forgets a segment whose file is gone). For a
 * recovery's rare questions only, such as whether a segment file found empty held messages not yet acknowledged.
 */
public final class AckStateProbe {
    /** Beside the queue's {@code acks} directory; what a crash during a probe leaves is removed by the next one. */
    private static final String DIRECTORY = "acks.probe";

    private AckStateProbe() {
    }

    /** The segments on disk, each with at least as many messages as it holds; read only when a segment is missing. */
    @FunctionalInterface
    public interface SegmentsOnDisk {
        Map<Integer, Long> counts() throws IOException;
    }

    /**
     * Rule "a missing segment is not forgotten" (docs/storage.md, "Recovery"), the question a broker's open and the offline
     * verify both ask: of the segments {@code checkpointed} counts messages in, those {@code hasFile} says have no file,
     * each with how many of its messages the ack state of {@code acksDirectory}, its journal replayed on a private copy,
     * counts unacknowledged; segments with none are left out. {@code onDisk} is asked only when a segment is missing: its
     * segments above those {@code checkpointed} knows (counting any message) are the probe's later segments (see
     * {@link #unacknowledgedIn(Path, int[], Map)}).
     */
    public static SortedMap<Integer, Long> unacknowledgedInMissing(Path acksDirectory, AckStateReader checkpointed,
                                                                  IntPredicate hasFile, SegmentsOnDisk onDisk) throws IOException {
        int[] missing = Arrays.stream(checkpointed.liveSegments())
                .filter(segment -> checkpointed.messageCount(segment) > 0 && !hasFile.test(segment))
                .toArray();
        SortedMap<Integer, Long> counted = new TreeMap<>();
        if (missing.length == 0) {
            return counted;
        }
        // Segments appended since the checkpoint, so that relocations into them apply in the probe's replay as they do in
        // recovery's.
        Map<Integer, Long> later = new HashMap<>();
        onDisk.counts().forEach((segment, count) -> {
            if (segment > checkpointed.highestKnownSegment() && count > 0) {
                later.put(segment, count);
            }
        });
        long[] unacknowledged = unacknowledgedIn(acksDirectory, missing, later);
        for (int i = 0; i < missing.length; i++) {
            if (unacknowledged[i] > 0) {
                counted.put(missing[i], unacknowledged[i]);
            }
        }
        return counted;
    }

    /**
     * How many of the messages the ack state of {@code acksDirectory} counts in {@code segment} are not acknowledged,
     * its journal replayed; 0 if it does not know the segment.
     */
    public static long unacknowledgedIn(Path acksDirectory, int segment) throws IOException {
        return unacknowledgedIn(acksDirectory, new int[] {segment}, Map.of())[0];
    }

    /**
     * As {@link #unacknowledgedIn(Path, int)} for each of {@code segments}, from one copy and one replay.
     * {@code laterSegments}: the segments on disk the checkpoint does not know, each with at least as many messages as
     * it holds. Segment counts are not journaled, and a relocation replayed to a segment the replay does not know is
     * never applied, which would leave a relocated source's slot unacknowledged; the counts given here only have to
     * cover the copies' slots, since only {@code segments}' figures are read.
     */
    public static long[] unacknowledgedIn(Path acksDirectory, int[] segments, Map<Integer, Long> laterSegments)
            throws IOException {
        long[] unacknowledged = new long[segments.length];
        Path copy = acksDirectory.resolveSibling(DIRECTORY);
        Directories.deleteRecursively(copy);
        Files.createDirectories(copy);
        try {
            for (String file : new String[] {AckFiles.CHECKPOINT, AckFiles.JOURNAL}) {
                if (Files.exists(acksDirectory.resolve(file))) {
                    Files.copy(acksDirectory.resolve(file), copy.resolve(file));
                }
            }
            try (AckLog log = AckLog.open(copy, AckJournal.MIN_CAPACITY_BYTES)) {
                boolean anyKnown = false;
                for (int segment : segments) {
                    anyKnown |= log.state().messageCount(segment) > 0;
                }
                if (!anyKnown) {
                    return unacknowledged;
                }
                // Every segment as the checkpoint counted it, so that the journal's records apply and none is dropped.
                for (int known : log.state().liveSegments()) {
                    log.segmentGrew(known, log.state().messageCount(known));
                }
                int highestKnown = log.state().highestKnownSegment();
                new TreeMap<>(laterSegments).forEach((later, count) -> {
                    if (later > highestKnown) {
                        log.segmentGrew(later, count);
                    }
                });
                log.recover();
                for (int i = 0; i < segments.length; i++) {
                    unacknowledged[i] = log.state().unackedCount(segments[i]);
                }
                return unacknowledged;
            }
        } finally {
            Directories.deleteRecursively(copy);
        }
    }
}
