package io.sluice.storage.recovery;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.tool.StorageTool;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A segment cut inside Chronicle's header and index (here to 1,000 bytes) used to be reported, by the broker's start and
 * by {@code bin/sluice verify}, only with Chronicle's "Meta data not ready", naming neither the file nor what is wrong
 * with it. Both now name the segment file and say it is cut short.
 */
class SegmentCutShortInItsHeaderTest {
    @TempDir
    Path dir;

    private static StoreConfig config() {
        return StoreConfig.builder().durability(DurabilityMode.ALWAYS).reservedDiskBytes(64L << 20).build();
    }

    @Test
    void theStartAndVerifyNameTheFileCutShortInItsHeader() throws Exception {
        Path segment;
        try (MessageStore store = MessageStore.open(dir, config())) {
            QueueStore q = store.createQueue("q");
            for (int i = 0; i < 100; i++) {
                q.append(null, ("m" + i).getBytes(StandardCharsets.UTF_8));
            }
            segment = q.segmentDirectory().resolve(SegmentFiles.fileName(0));
        }
        try (RandomAccessFile file = new RandomAccessFile(segment.toFile(), "rw")) {
            file.setLength(1_000);
        }

        assertVerifyNamesTheFileCutShort(segment);
        RuntimeException refused = assertThrows(RuntimeException.class, () -> {
            try (MessageStore store = MessageStore.open(dir, config())) {
                store.queue("q");
            }
        });
        assertTrue(refused.getMessage().contains(segment.toString()) && refused.getMessage().contains("cut short"),
                refused.toString());
        assertVerifyNamesTheFileCutShort(segment); // after the start, whose mapping may have lengthened the file with zeros
    }

    private void assertVerifyNamesTheFileCutShort(Path segment) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code = StorageTool.run(new String[] {"verify", dir.toString()}, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        String report = out.toString(StandardCharsets.UTF_8);
        assertEquals(StorageTool.EXIT_DAMAGED, code, report);
        assertTrue(report.contains("DAMAGE") && report.contains(segment.toString()) && report.contains("cut short"), report);
    }
}
