package io.sluice.storage.tool;

import io.sluice.storage.ByteArrays;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
}
