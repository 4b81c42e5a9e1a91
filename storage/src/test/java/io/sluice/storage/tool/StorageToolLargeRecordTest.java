package io.sluice.storage.tool;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The broker sizes Chronicle's block from {@code max-message-bytes} ({@link StoreConfig#chronicleBlockBytes()}); the tool
 * opens segments with Chronicle's default block (64 MiB, within a quarter of which Chronicle writes a document) and is
 * given no configuration. A record Chronicle's default block could not have written, above 16 MiB, is still read whole,
 * one lying across a 64 MiB boundary of the file included: Chronicle's reads are not bound by the block.
 */
class StorageToolLargeRecordTest {
    private static final int LARGE = (20 << 20) + 1;

    @TempDir
    Path dir;

    @Test
    void recordsAboveAQuarterOfChroniclesDefaultBlockAreVerifiedAndDumped() {
        StoreConfig config = StoreConfig.builder().durability(DurabilityMode.NEVER).segmentBytes(96L << 20)
                .maxMessageBytes(24 << 20).build();
        assertTrue(config.chronicleBlockBytes() > 64L << 20, "the broker's block is larger than Chronicle's default");
        try (MessageStore store = MessageStore.open(dir, config)) {
            QueueStore q = store.createQueue("big");
            for (int i = 0; i < 4; i++) { // the fourth lies across 64 MiB into the file, and past 80 MiB
                byte[] payload = new byte[LARGE];
                Arrays.fill(payload, (byte) ('a' + i));
                assertEquals(i, q.append(7, i, null, ByteBuffer.wrap(payload)));
            }
            assertEquals(4, q.append(7, 4, null, ByteBuffer.wrap("end".getBytes(StandardCharsets.US_ASCII))));
        }

        Outcome verified = Outcome.of("verify", dir.toString());
        assertEquals(StorageTool.EXIT_CLEAN, verified.exitCode(), verified.out() + verified.err());
        assertTrue(Arrays.asList(verified.out().split("\n")).contains("  total: 1 segment(s), 5 message(s), 5 unacked, 0 corrupt"),
                verified.out());

        Outcome dump = Outcome.of("dump", dir.toString(), "big");
        assertEquals(StorageTool.EXIT_CLEAN, dump.exitCode(), dump.out() + dump.err());
        String[] dumped = dump.out().split("\n");
        for (int i = 0; i < 4; i++) {
            assertEquals(String.format("0x%016x 0/%d unacked delivered 0 producer 7/%d headers 0 B payload %d B \"%s\" ...", i, i, i,
                    LARGE, String.valueOf((char) ('a' + i)).repeat(QueueDumper.PREVIEW_BYTES)), dumped[2 + i]);
        }
        assertEquals("0x0000000000000004 0/4 unacked delivered 0 producer 7/4 headers 0 B payload 3 B \"end\"", dumped[6]);
        assertEquals("5 record(s) printed", dumped[7]);
    }
}
