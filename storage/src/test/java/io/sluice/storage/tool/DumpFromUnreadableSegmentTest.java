package io.sluice.storage.tool;

import io.sluice.storage.ByteArrays;
import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

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
    private static final int MESSAGES = 7_500;

    @TempDir
    Path dir;
    private final List<Long> ids = new ArrayList<>();

    private Path segmentFile(int segment) {
        return dir.resolve("queues/orders/segments").resolve(SegmentFiles.fileName(segment));
    }

    private static byte[] marker(int message) {
        return String.format("MSG-%06d", message).getBytes(StandardCharsets.US_ASCII);
    }

    /** Three segments of 256-byte records, each payload starting with its message's marker. */
    private void fill() {
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().durability(DurabilityMode.NEVER)
                .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes(64 << 10).build())) {
            QueueStore orders = store.createQueue("orders");
            for (int i = 0; i < MESSAGES; i++) {
                byte[] payload = new byte[256];
                System.arraycopy(marker(i), 0, payload, 0, marker(i).length);
                ids.add(orders.append(7, i, null, ByteBuffer.wrap(payload)));
            }
        }
        assertEquals(2, ids.get(MESSAGES - 1) >>> 32, "three segments");
    }

    /** Makes the Chronicle header of the record with id {@code id} claim 4 MiB, past its file's end. */
    private void claimPastTheEnd(long id) throws IOException {
        Path file = segmentFile((int) (id >>> 32));
        byte[] bytes = Files.readAllBytes(file);
        int payloadAt = ByteArrays.indexOf(bytes, marker(ids.indexOf(id)));
        assertTrue(payloadAt > 0, "the damaged record's payload is in " + file);
        // Chronicle's 4-byte header precedes the record's 48-byte header.
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putInt(payloadAt - 48 - 4, 4 << 20);
        Files.write(file, bytes);
    }

    @Test
    void dumpFromAnIdInAnUnreadableSegmentReadsNothingBeforeIt() throws IOException {
        fill();
        claimPastTheEnd(ids.get(1_000));
        byte[] segment1 = Files.readAllBytes(segmentFile(1));
        ByteBuffer.wrap(segment1).putInt(0, 0);
        Files.write(segmentFile(1), segment1);

        Outcome r = Outcome.of("dump", dir.toString(), "orders", "--from", "1/5", "--limit", "2");
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        String[] lines = r.out().split("\n");
        assertTrue(lines.length == 6 && lines[2].startsWith("DAMAGE segment 1: " + segmentFile(1)), r.out() + r.err());
        assertTrue(lines[3].startsWith("0x0000000200000000 2/0 "), r.out());
        assertTrue(lines[4].startsWith("0x0000000200000001 2/1 "), r.out());
        assertEquals("2 record(s) printed", lines[5], r.out());
    }

    @Test
    void dumpFromAnIdWhoseJumpFaultsReportsItsSegmentAndGoesOnAtTheNext() throws IOException {
        fill();
        // Chronicle indexes every 16th record: the jump to 1/1014 reads from 1/1008 on, through the damaged 1/1011.
        claimPastTheEnd(1L << 32 | 1_011);

        Outcome r = Outcome.of("dump", dir.toString(), "orders", "--from", "1/1014", "--limit", "2");
        assertEquals(StorageTool.EXIT_DAMAGED, r.exitCode(), r.out() + r.err());
        String[] lines = r.out().split("\n");
        assertTrue(lines.length == 6 && lines[2].startsWith("DAMAGE segment 1: segment file " + segmentFile(1)
                + " cannot be read"), r.out() + r.err());
        assertTrue(lines[3].startsWith("0x0000000200000000 2/0 "), r.out());
        assertTrue(lines[4].startsWith("0x0000000200000001 2/1 "), r.out());
        assertEquals("2 record(s) printed", lines[5], r.out());
    }
}
