package io.sluice.storage.durability;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.segment.FileReleaser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;

/** One queue's durability bookkeeping, driven by hand (no flusher thread). */
class DurabilityTest {
    @TempDir
    Path dir;

    /**
     * A queue nothing was ever appended to has written index -1, which is no segment's: the flusher's turn
     * on it under {@code never} (closing the channels of segments appends have left) must find nothing to
     * close. It used to ask the roll cycle for the segment of id -1, which throws, and the flusher failed
     * the queue: every new queue under {@code never} refused appends if the flusher reached it before its
     * first append ({@code ReclaimTest} hung on it, its producer thread dead).
     */
    @Test
    void aTurnOnAQueueNeverAppendedToUnderNeverFailsNothing() throws Exception {
        Path segments = Files.createDirectories(dir.resolve("queues/q/segments"));
        FileReleaser releaser = new FileReleaser();
        try (SegmentSyncer syncer = new SegmentSyncer(segments, releaser, FileForcer.FSYNC)) {
            Durability durability = new Durability("q", DurabilityMode.NEVER, 1_000, syncer, () -> { }, () -> { }, -1);
            assertFalse(durability.flush(System.nanoTime()));
            assertNull(durability.failure(), "the queue is not failed");
        } finally {
            releaser.close();
        }
    }
}
