package io.sluice.storage.ack;

import io.sluice.storage.Directories;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The probe's count for a relocated source whose file is gone and whose SEGMENT_RECLAIMED record never reached the disk
 * (R4 renames it after the record's append, not its force). The checkpoint knows the source, not the copy's segment,
 * appended since: segment counts are not journaled. The source's slots replay as acknowledged or relocated, so its
 * count is 0, provided the probe hears of the copy's segment; without it the relocation is never applied.
 */
class AckStateProbeTest {
    private static final int SOURCE = 0;
    private static final int COPIES = 1;

    @TempDir
    Path dir;

    private static long id(int segment, long seq) {
        return ((long) segment << 32) | seq;
    }

    /** The ack files as a machine crash leaves them after the relocation: the journal forced, no checkpoint since. */
    private Path relocatedSource(int ackedInSource) throws Exception {
        Path acks = dir.resolve("acks");
        Path image = dir.resolve("image").resolve("acks");
        try (AckLog log = AckLog.open(acks, AckJournal.MIN_CAPACITY_BYTES)) {
            log.segmentGrew(SOURCE, 10);
            log.recover(); // its checkpoint knows the source
            log.ackRange(id(SOURCE, 0), id(SOURCE, ackedInSource - 1));
            log.segmentGrew(COPIES, 5);
            log.relocate(id(SOURCE, 9), id(COPIES, 4));
            log.force();
            Files.createDirectories(image);
            for (String file : new String[] {AckFiles.CHECKPOINT, AckFiles.JOURNAL}) {
                Files.copy(acks.resolve(file), image.resolve(file));
            }
        }
        Directories.deleteRecursively(acks);
        return image;
    }

    @Test
    void aRelocatedSourceCountsNothingUnacknowledged() throws Exception {
        Path image = relocatedSource(9);
        assertArrayEquals(new long[] {0}, AckStateProbe.unacknowledgedIn(image, new int[] {SOURCE}, Map.of(COPIES, 5L)));
    }

    @Test
    void withoutTheCopysSegmentTheRelocationIsNotApplied() throws Exception {
        Path image = relocatedSource(9);
        assertEquals(1, AckStateProbe.unacknowledgedIn(image, SOURCE));
    }

    @Test
    void aSourceWithAnUnacknowledgedMessageLeftCountsIt() throws Exception {
        Path image = relocatedSource(8);
        assertArrayEquals(new long[] {1}, AckStateProbe.unacknowledgedIn(image, new int[] {SOURCE}, Map.of(COPIES, 5L)));
    }
}
