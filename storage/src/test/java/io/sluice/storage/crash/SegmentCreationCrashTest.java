package io.sluice.storage.crash;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hand-made copy of what {@link CrashRecoveryTest} found: a kill -9 during a roll leaves the new
 * segment file with only its first header word written, 0x80000000 (not complete, length 0), and
 * zeros after it. Chronicle waited its timeout for that header at every open of the file, so
 * recovery took over a minute.
 */
@Tag("slow")
class SegmentCreationCrashTest {
    @TempDir
    Path dir;

    @Test
    void shouldRecoverPromptlyWhenKilledWhileCreatingASegment() throws Exception {
        StoreConfig config = StoreConfig.builder()
                .durability(DurabilityMode.ALWAYS)
                .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                .maxMessageBytes(64 << 10)
                .reservedDiskBytes(64L << 20)
                .build();
        List<Long> ids = new ArrayList<>();
        Path segments;
        int last;
        try (MessageStore store = MessageStore.open(dir, config)) {
            QueueStore queue = store.createQueue("q");
            for (int i = 0; i < 3000; i++) {
                ids.add(queue.append(null, CrashingWriter.payload("reclaim", i)));
            }
            segments = queue.segmentDirectory();
            List<Integer> numbers = queue.segmentNumbers();
            last = numbers.get(numbers.size() - 1);
        }
        Path torn = SegmentFiles.file(segments, last + 1);
        ByteBuffer file = ByteBuffer.allocate(1310720).order(ByteOrder.LITTLE_ENDIAN);
        file.putInt(0, 0x8000_0000);
        Files.write(torn, file.array());

        long started = System.nanoTime();
        try (MessageStore store = MessageStore.open(dir, config)) {
            long openMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            assertTrue(openMillis < 5_000, "recovery took " + openMillis + " ms");
            assertFalse(Files.exists(torn), "the never-initialised segment file is deleted");
            QueueStore queue = store.queue("q");
            assertEquals(ids.size(), queue.unackedMessages());
            for (int i = 0; i < ids.size(); i += 97) {
                assertArrayEquals(CrashingWriter.payload("reclaim", i), queue.read(ids.get(i)).payloadBytes());
            }
            long next = queue.append(null, CrashingWriter.payload("reclaim", 5000));
            assertArrayEquals(CrashingWriter.payload("reclaim", 5000), queue.read(next).payloadBytes());
            assertTrue(queue.whenDurable(next).get(10, TimeUnit.SECONDS) == next);
        }
    }
}
