package io.sluice.storage.ack;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * Rule "a lost copy gives its message back" ({@link LostCopies}) for a message relocated twice: its original's segment
 * was reclaimed after the first move, and a machine crash took the second copy after a checkpoint had recorded it. The
 * message goes back to the first copy, which the segments hold ({@code RelocationMachineCrashTest} has the
 * one-move case on a disk image).
 */
class LostCopiesTest {
    @TempDir
    Path dir;

    @Test
    void aMessageWhoseSecondCopyIsLostGoesBackToItsFirstCopy() throws IOException {
        long original = AckTracker.id(0, 3);
        long firstCopy = AckTracker.id(1, 4);
        long lostCopy = AckTracker.id(2, 0);
        AckLog log = AckLog.open(dir);
        log.segmentGrew(0, 10);
        log.recover();
        log.segmentGrew(1, 5);
        log.relocate(original, firstCopy);
        for (long seq = 0; seq < 10; seq++) {
            if (seq != 3) {
                log.ack(AckTracker.id(0, seq));
            }
        }
        log.segmentReclaimed(0);
        log.segmentGrew(2, 1);
        log.relocate(original, lostCopy);
        log.checkpoint(); // a rotation: the second move is in the checkpoint before its copy was forced
        // The machine crashes: segment 2 never reached the disk, segment 1 did (the first move was forced).

        AckLog reopened = AckLog.open(dir);
        reopened.segmentGrew(1, 5);
        Map<Long, Long> asked = new HashMap<>();
        reopened.recover((lost, holds) -> {
            asked.putAll(lost);
            return holds.test(firstCopy) ? Map.of(original, firstCopy) : Map.of();
        });
        assertEquals(Map.of(original, lostCopy), asked, "asked for an earlier copy of the message whose original is gone");
        AckStateReader state = reopened.state();
        assertEquals(firstCopy, state.physicalId(original), "the message is back in its first copy");
        assertFalse(state.isAcked(original));
        assertFalse(state.isSlotAcked(firstCopy));
        assertEquals(5, state.unackedCount(), "segment 1's four messages and the straggler");
        assertEquals(AckResult.NEWLY_ACKED, reopened.ack(original));
        reopened.close();
        log.close();
    }
}
