package io.sluice.storage.tool;

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

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code dump --from ID} with ID in a segment Chronicle cannot read (its first header zeros, so the tool reads around it)
 * starts at the first record after ID, in the next segment it can read. It used to start at the queue's first record and
 * skip the lines before ID: the output was right, but every record before ID was read, so a segment before ID that cannot
 * be read to its end ended the dump with no record printed. Here that segment holds a record whose Chronicle header claims
 * more bytes than the file has, whose read faults.
 */
@Tag("mapped-fault") // in a JVM of its own (storage/pom.xml): the read that would fault raises a real SIGBUS
class DumpFromUnreadableSegmentTest {
    private static final int MESSAGES = 7_500;
    private static final int DAMAGED_RECORD = 1_000;

    @TempDir
    Path dir;

    private Path segmentFile(int segment) {
        return dir.resolve("queues/orders/segments").resolve(SegmentFiles.fileName(segment));
    }

    @Test
    void dumpFromAnIdInAnUnreadableSegmentReadsNothingBeforeIt() throws IOException {
        byte[] marker = "DAMAGED-RECORD".getBytes(StandardCharsets.US_ASCII);
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().durability(DurabilityMode.NEVER)
                .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes(64 << 10).build())) {
            QueueStore orders = store.createQueue("orders");
            for (int i = 0; i < MESSAGES; i++) {
                byte[] payload = new byte[256];
                if (i == DAMAGED_RECORD) {
                    System.arraycopy(marker, 0, payload, 0, marker.length);
                }
                orders.append(7, i, null, ByteBuffer.wrap(payload));
            }
        }
        byte[] segment0 = Files.readAllBytes(segmentFile(0));
        int payloadAt = StorageToolTest.indexOf(segment0, marker);
        assertTrue(payloadAt > 0, "the damaged record's payload is in segment 0");
        // Chronicle's 4-byte header precedes the record's 48-byte header: it now claims 4 MiB, past the file's end.
        ByteBuffer.wrap(segment0).order(ByteOrder.LITTLE_ENDIAN).putInt(payloadAt - 48 - 4, 4 << 20);
        Files.write(segmentFile(0), segment0);
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
}
