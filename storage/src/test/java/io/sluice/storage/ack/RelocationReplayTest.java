package io.sluice.storage.ack;

import io.sluice.storage.Directories;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Replaying a RELOCATED record after a machine crash, when the copy's segment is not on disk. Either
 * the copy was acknowledged and its segment reclaimed (a SEGMENT_RECLAIMED record says so, later in
 * the journal or in the checkpoint), and the message is gone for good; or the segment the copy was
 * written to never reached the disk (the journal page was written back before the new segment file),
 * and the original, whose segment is still there, is the message: it must stay unacknowledged.
 */
class RelocationReplayTest {
    private final Path dir;

    RelocationReplayTest() throws IOException {
        dir = Files.createTempDirectory("acks-relocation");
    }

    @AfterEach
    void delete() {
        Directories.deleteRecursively(dir);
    }

    private static long id(int segment, long seq) {
        return AckTracker.id(segment, seq);
    }

    @Test
    void aCopyWhoseSegmentNeverReachedTheDiskLeavesTheOriginalUnacknowledged() throws IOException {
        AckLog log = AckLog.open(dir, 4096);
        log.segmentGrew(0, 10);
        log.recover();
        log.segmentGrew(1, 1); // the copy starts segment 1
        log.relocate(id(0, 5), id(1, 0));
        log.force(); // the journal page reaches the disk; segment 1's file never does
        // The process dies (the log is abandoned); on restart only segment 0 is on disk.
        AckLog reopened = AckLog.open(dir, 4096);
        reopened.segmentGrew(0, 10);
        reopened.recover();
        assertFalse(reopened.state().isAcked(id(0, 5)), "the original is the only copy left and must stay unacknowledged");
        assertEquals(10, reopened.state().unackedCount());
        assertEquals(AckResult.NEWLY_ACKED, reopened.ack(id(0, 5)));
        reopened.close();
    }

    @Test
    void aCopyWhoseSegmentWasReclaimedAfterItsAckLeavesTheMessageAcknowledged() throws IOException {
        AckLog log = AckLog.open(dir, 4096);
        log.segmentGrew(0, 10);
        log.recover();
        log.segmentGrew(1, 1);
        log.relocate(id(0, 5), id(1, 0));
        log.ack(id(0, 5)); // acknowledges the copy
        log.ackRange(id(0, 0), id(0, 9));
        log.segmentReclaimed(0);
        log.segmentGrew(2, 1);
        log.segmentReclaimed(1);
        AckLog reopened = AckLog.open(dir, 4096);
        reopened.segmentGrew(2, 1);
        reopened.recover();
        assertTrue(reopened.state().isAcked(id(0, 5)));
        assertTrue(reopened.state().isAcked(id(1, 0)));
        assertEquals(1, reopened.state().unackedCount(), "only the message of segment 2");
        reopened.close();
    }
}
