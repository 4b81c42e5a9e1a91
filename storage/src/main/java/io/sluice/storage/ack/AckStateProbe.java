package io.sluice.storage.ack;

import io.sluice.storage.Directories;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

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

    /**
     * How many of the messages the ack state of {@code acksDirectory} counts in {@code segment} are not acknowledged,
     * its journal replayed; 0 if it does not know the segment.
     */
    public static long unacknowledgedIn(Path acksDirectory, int segment) throws IOException {
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
                if (log.state().messageCount(segment) == 0) {
                    return 0;
                }
                // Every segment as the checkpoint counted it, so that the journal's records apply and none is dropped.
                for (int known : log.state().liveSegments()) {
                    log.segmentGrew(known, log.state().messageCount(known));
                }
                log.recover();
                return log.state().unackedCount(segment);
            }
        } finally {
            Directories.deleteRecursively(copy);
        }
    }
}
