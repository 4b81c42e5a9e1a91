package io.sluice.storage.tool;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code dump --from ID} where a segment cannot be read to its end: a record there whose Chronicle header claims more
 * bytes than the file has, whose read faults.
 * <ul>
 *   <li>With ID in a segment Chronicle cannot read (its first header zeros, so the tool reads around it), the dump starts
 *       at the first record after ID, in the next segment it can read. It used to start at the queue's first record and
 *       skip the lines before ID: every record before ID was read, so a segment before ID that cannot be read to its end
 *       ended the dump with no record printed.</li>
 *   <li>With ID in a segment whose header is fine and whose damaged record lies between ID and the index entry before it,
 *       the jump to ID itself faults: the dump reports that segment's damage and goes on at the next segment, where it
 *       used to end with an error and nothing printed.</li>
 * </ul>
 */
@Tag("mapped-fault") // in a JVM of its own (storage/pom.xml): the read that would fault raises a real SIGBUS
class DumpFromUnreadableSegmentTest {
    @TempDir
    Path dir;

    @Test
    void dumpFromAnIdInAnUnreadableSegmentReadsNothingBeforeIt() throws IOException {
        MarkedQueue orders = MarkedQueue.fill(dir, 0);
        orders.claimPastTheEnd(orders.ids.get(1_000));
        byte[] segment1 = Files.readAllBytes(orders.segmentFile(1));
        ByteBuffer.wrap(segment1).putInt(0, 0);
        Files.write(orders.segmentFile(1), segment1);

        Outcome r = Outcome.of("dump", dir.toString(), "orders", "--from", "1/5", "--limit", "2");
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        String[] lines = r.out().split("\n");
        assertTrue(lines.length == 6 && lines[2].startsWith("DAMAGE segment 1: " + orders.segmentFile(1)), r.out() + r.err());
        assertTrue(lines[3].startsWith("0x0000000200000000 2/0 "), r.out());
        assertTrue(lines[4].startsWith("0x0000000200000001 2/1 "), r.out());
        assertEquals("2 record(s) printed", lines[5], r.out());
    }

    @Test
    void dumpFromAnIdWhoseJumpFaultsReportsItsSegmentAndGoesOnAtTheNext() throws IOException {
        MarkedQueue orders = MarkedQueue.fill(dir, 0);
        // Chronicle indexes every 16th record: the jump to 1/1014 reads from 1/1008 on, through the damaged 1/1011.
        orders.claimPastTheEnd(1L << 32 | 1_011);

        Outcome r = Outcome.of("dump", dir.toString(), "orders", "--from", "1/1014", "--limit", "2");
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        String[] lines = r.out().split("\n");
        assertTrue(lines.length == 6 && lines[2].startsWith("DAMAGE segment 1: segment file " + orders.segmentFile(1)
                + " cannot be read"), r.out() + r.err());
        assertTrue(lines[3].startsWith("0x0000000200000000 2/0 "), r.out());
        assertTrue(lines[4].startsWith("0x0000000200000001 2/1 "), r.out());
        assertEquals("2 record(s) printed", lines[5], r.out());
    }
}
