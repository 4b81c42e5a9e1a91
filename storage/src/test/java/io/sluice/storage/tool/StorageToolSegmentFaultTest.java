package io.sluice.storage.tool;

import io.sluice.storage.ByteArrays;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A segment that is not the last physically cut short (its file truncated in the middle of its records, as a partial copy
 * leaves it): Chronicle's index, near the file's start, still counts the records past the cut, and reading them faults.
 * dump reports the segment as damage naming the file, prints the records wholly before the cut (not the one the cut
 * reaches) and the later segments', and exits 1; it used to fail with Chronicle's error before printing any record,
 * {@code --from} or not: the record count read at its start walks past the cut (Chronicle counts from its index's last
 * entry on, unless its header's count spares it the walk), and so does the read of the records.
 */
@Tag("mapped-fault") // in a JVM of its own (storage/pom.xml): the reads past the cut raise a real SIGBUS
class StorageToolSegmentFaultTest {
    /** The message of segment 1 whose record a test damages: the cut reaches it, or its header claims bytes past the end. */
    private static final int CUT_AT = 5_000;
    /** Acknowledged messages, all in segment 0. */
    private static final int ACKED_PREFIX = 1_000;
    private static final int PAGE_BYTES = 4096;

    @TempDir
    Path dir;
    private MarkedQueue orders;
    private List<Long> ids;

    private void fill() {
        orders = MarkedQueue.fill(dir, ACKED_PREFIX);
        ids = orders.ids;
        assertEquals(1, ids.get(CUT_AT) >>> 32, "the damage is in segment 1");
    }

    /**
     * Truncates segment 1's file at the start of the page that holds message {@code CUT_AT}'s payload (a cut inside a page
     * would leave zeros to its end, which read as the end of the records, not as a fault); returns the first message whose
     * record the cut reaches.
     */
    private int cutSegment1() throws IOException {
        Path file = orders.segmentFile(1);
        byte[] bytes = Files.readAllBytes(file);
        int at = ByteArrays.indexOf(bytes, MarkedQueue.marker(CUT_AT));
        assertTrue(at > 0, "the payload of message " + CUT_AT + " is in " + file);
        int cut = at & -PAGE_BYTES;
        int first = CUT_AT;
        while (ByteArrays.indexOf(bytes, MarkedQueue.marker(first - 1)) + MarkedQueue.PAYLOAD_BYTES > cut) {
            first--;
        }
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(cut);
        }
        return first;
    }

    /** Verify's table row of {@code segment}: its file, its bytes, and the records, unacknowledged and corrupt counts given. */
    private static Pattern row(int segment, long records, long unacknowledged) {
        return Pattern.compile("\\n  " + segment + " +" + Pattern.quote(SegmentFiles.fileName(segment)) + " +\\d+ +" + records + " +"
                + unacknowledged + " +0\\n");
    }

    /** The ids of the record lines of a dump, in order. */
    private static List<Long> printedIds(String out) {
        return out.lines().filter(line -> line.startsWith("0x")).map(line -> Long.parseUnsignedLong(line.substring(2, 18), 16))
                .toList();
    }

    @Test
    void dumpReportsACutSegmentAndPrintsTheRecordsBeforeTheCutAndTheNextSegments() throws IOException {
        fill();
        int cut = cutSegment1();

        Outcome r = Outcome.of("dump", dir.toString(), "orders");
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.err() + r.out().lines().limit(8).toList());
        assertTrue(r.out().contains("\nDAMAGE segment 1: segment file " + orders.segmentFile(1) + " cannot be read"),
                r.err() + r.out().lines().filter(l -> !l.startsWith("0x")).toList());
        List<Long> expected = new ArrayList<>(ids.subList(0, cut));
        expected.addAll(ids.stream().filter(id -> id >>> 32 == 2).toList());
        assertEquals(expected, printedIds(r.out()));
        assertTrue(r.out().endsWith(expected.size() + " record(s) printed\n"), r.out().lines().filter(l -> !l.startsWith("0x")).toList()
                .toString());
    }

    @Test
    void dumpFromAnIdInACutSegmentPrintsItsRecordsUpToTheCutAndTheNextSegments() throws IOException {
        fill();
        int cut = cutSegment1();
        long from = ids.get(cut - 10);

        Outcome r = Outcome.of("dump", dir.toString(), "orders", "--from", Long.toString(from));
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.err() + r.out().lines().limit(8).toList());
        assertTrue(r.out().contains("\nDAMAGE segment 1: segment file " + orders.segmentFile(1) + " cannot be read"),
                r.err() + r.out().lines().filter(l -> !l.startsWith("0x")).toList());
        List<Long> expected = new ArrayList<>(ids.subList(cut - 10, cut));
        expected.addAll(ids.stream().filter(id -> id >>> 32 == 2).toList());
        assertEquals(expected, printedIds(r.out()));
    }

    /**
     * A record in the middle of segment 1 whose Chronicle header claims bytes past the file's end: verify's scan faults
     * there. It used to end the queue's check with {@code DAMAGE queue cannot be read}, saying nothing of segment 2 or of
     * the ack state; the segment is reported, and the check goes on with the next one.
     */
    @Test
    void verifyReportsASegmentWhoseScanFaultsAndChecksTheNextSegmentsAndTheAckState() throws IOException {
        fill();
        orders.claimPastTheEnd(ids.get(CUT_AT));
        int inSegment1 = CUT_AT - (int) orders.messagesIn(0);

        Outcome r = Outcome.of("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(Pattern.compile("\n  DAMAGE segment 1: segment file " + Pattern.quote(orders.segmentFile(1).toString())
                + " cannot be read: it is cut short or damaged in Chronicle's header or index \\(java.io.EOFException: a record"
                + " ends at byte \\d+, past the file's end at byte " + Files.size(orders.segmentFile(1)) + "\\); the records from 0x"
                + Long.toHexString(ids.get(CUT_AT)) + " on in it are not read, and reading goes on at the next segment\n")
                .matcher(r.out()).find(), r.out() + r.err());
        assertTrue(row(0, orders.messagesIn(0), orders.messagesIn(0) - ACKED_PREFIX).matcher(r.out()).find(), r.out());
        assertTrue(row(1, inSegment1, orders.messagesIn(1)).matcher(r.out()).find(), r.out());
        assertTrue(row(2, orders.messagesIn(2), orders.messagesIn(2)).matcher(r.out()).find(), r.out());
        assertTrue(r.out().contains("ack checkpoint: generation"), r.out());
        assertTrue(r.out().contains("ack journal: "), r.out());
        assertFalse(r.out().contains("broker appending"), r.out()); // the records the scan did not read are not being written
        assertTrue(r.out().contains("Result: DAMAGED (1 of 1 queue(s))"), r.out());
    }

    /** A segment cut short in its records: verify used to end the queue's check as the dump did. */
    @Test
    void verifyReportsACutSegmentAndChecksTheNextSegmentsAndTheAckState() throws IOException {
        fill();
        int inSegment1 = cutSegment1() - (int) orders.messagesIn(0);

        Outcome r = Outcome.of("verify", dir.toString());
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().contains("\n  DAMAGE segment 1: segment file " + orders.segmentFile(1) + " cannot be read"), r.out() + r.err());
        assertTrue(row(1, inSegment1, orders.messagesIn(1)).matcher(r.out()).find(), r.out());
        assertTrue(row(2, orders.messagesIn(2), orders.messagesIn(2)).matcher(r.out()).find(), r.out());
        assertTrue(r.out().contains("ack checkpoint: generation"), r.out());
        assertTrue(r.out().contains("Result: DAMAGED (1 of 1 queue(s))"), r.out());
    }
}
