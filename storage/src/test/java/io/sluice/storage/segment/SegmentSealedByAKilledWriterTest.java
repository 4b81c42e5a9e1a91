package io.sluice.storage.segment;

import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueReader;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.StoredMessage;
import net.openhft.chronicle.queue.ExcerptAppender;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import net.openhft.chronicle.wire.DocumentContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A writer killed in the middle of a roll: Chronicle had written the end-of-file marker into the segment it was leaving
 * and died before the next segment's first record. The store opened again finds the sealed segment last on disk and
 * no ack state past it, so it appended into it again, which Chronicle refuses ("You should not be able to write at
 * EOF"): on main every later append that fit in the segment's remaining space failed, nothing was written, and the
 * queue took no message again until one too large for that space came (a crash test's first append after a kill,
 * and reclaim's relocations in CI's logs, met it). Now the append moves on to the next segment, as the killed
 * writer had.
 */
class SegmentSealedByAKilledWriterTest {
    private static final byte[] PAYLOAD = new byte[1000];

    @TempDir
    Path dir;

    @Test
    void anAppendAfterARollCutShortGoesToTheNextSegment() throws Exception {
        StoreConfig config = StoreConfig.builder().segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes(64 << 10).build();
        List<Long> ids = new ArrayList<>();
        try (MessageStore store = MessageStore.open(dir, config)) {
            QueueStore q = store.createQueue("q");
            for (int i = 0; i < 10; i++) {
                ids.add(q.append(7, i + 1, ByteBuffer.allocate(0), ByteBuffer.wrap(PAYLOAD)));
            }
        }
        Path segments = dir.resolve("queues/q/segments");
        // The killed writer's roll: Chronicle seals segment 0 as it moves to segment 1, whose file never got a record.
        SegmentClock clock = new SegmentClock(0);
        try (SingleChronicleQueue chronicle = SingleChronicleQueueBuilder.binary(segments.toFile())
                .rollCycle(SegmentRollCycle.INSTANCE).timeProvider(clock).build();
             ExcerptAppender appender = chronicle.createAppender()) {
            try (DocumentContext dc = appender.writingDocument()) {
                dc.rollbackOnClose();
            }
            clock.advance();
            try (DocumentContext dc = appender.writingDocument()) {
                dc.rollbackOnClose();
            }
        }
        Files.deleteIfExists(SegmentFiles.file(segments, 1));

        try (MessageStore store = MessageStore.open(dir, config)) {
            QueueStore q = store.queue("q");
            long next = q.append(7, 11, ByteBuffer.allocate(0), ByteBuffer.wrap(PAYLOAD));
            assertEquals(1, (int) (next >>> 32), "the append went to the segment after the sealed one");
            ids.add(next);
            List<Long> read = new ArrayList<>();
            try (QueueReader reader = q.openReader()) {
                for (StoredMessage m = reader.next(); m != null; m = reader.next()) {
                    read.add(m.id());
                }
            }
            assertEquals(ids, read, "every message, the new one after the sealed segment's");
        }
    }
}
