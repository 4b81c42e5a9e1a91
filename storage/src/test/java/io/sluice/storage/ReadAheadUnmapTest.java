package io.sluice.storage;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.sluice.storage.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 14, item 2.5: the read-ahead must not keep a reclaimed segment mapped while its reader stays
 * open. A reader that starts behind makes the read-ahead thread walk ahead of it with a tailer; once
 * the consumer has caught up and keeps up, that tailer must not stay in a segment reclaim deletes.
 */
class ReadAheadUnmapTest {
    private static final int PAYLOAD = 1000;
    /** About five 1 MiB segments of 1,000-byte records: the reader starts segments behind the tail. */
    private static final int BACKLOG = 5_000;

    @TempDir
    Path dir;

    @Test
    void shouldUnmapReclaimedSegmentsWhileTheReaderStaysOpenAndKeepsUp() throws Exception {
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder()
                .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                .maxMessageBytes(64 << 10)
                .durability(DurabilityMode.NEVER)
                .build())) {
            drainAndKeepUp(store.createQueue("q"));
        }
    }

    private static void drainAndKeepUp(QueueStore q) throws Exception {
        long last = -1;
        for (int i = 0; i < BACKLOG; i++) {
            last = q.append(null, new byte[PAYLOAD]);
        }
        long backlogEnd = last;
        try (QueueReader reader = q.openReader()) {
            until("the read-ahead walked the backlog", () -> reader.readAheadIndex() == backlogEnd, 30, TimeUnit.SECONDS);
            long received = 0;
            // The consumer drains the backlog, then keeps up with a producer while segments roll.
            for (int round = 0; round < 40; round++) {
                for (StoredMessage m = reader.next(); m != null; m = reader.next()) {
                    q.ack(m.id());
                    received++;
                }
                for (int i = 0; i < 200; i++) {
                    last = q.append(null, new byte[PAYLOAD]);
                }
            }
            for (StoredMessage m = reader.next(); m != null; m = reader.next()) {
                q.ack(m.id());
                received++;
            }
            assertEquals(BACKLOG + 40 * 200, received, "every message was read once");
            assertEquals(last, reader.position() - 1, "the reader is at the tail");
            int writeSegment = (int) (last >>> 32);
            assertTrue(writeSegment >= 10, "segments rolled while the reader kept up: write segment " + writeSegment);
            until("every sealed segment is reclaimed", () -> q.segmentNumbers().size() == 1);
            assertTrue(q.stats().reclaimedSegments() >= writeSegment, "reclaimed " + q.stats().reclaimedSegments());
            // Chronicle unmaps a released file on its background thread; a mapping still held stays.
            try {
                until("no reclaimed segment is still mapped while the reader is open",
                        () -> deletedMappings(q.segmentDirectory()).isEmpty(), 10, TimeUnit.SECONDS);
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + "; still mapped: " + deletedMappings(q.segmentDirectory()), e);
            }
            assertNull(reader.next(), "nothing more to read");
            long next = q.append(null, new byte[PAYLOAD]);
            StoredMessage m = reader.next();
            assertNotNull(m, "the reader still reads what comes next");
            assertEquals(next, m.id());
        }
    }

    /** The files under {@code segmentDir} that this process maps although they are deleted. */
    private static List<String> deletedMappings(Path segmentDir) {
        try {
            return Files.readAllLines(Path.of("/proc/self/maps")).stream()
                    .filter(l -> l.contains(segmentDir.toString()) && l.contains("(deleted)"))
                    .map(l -> l.substring(l.indexOf('/')))
                    .distinct()
                    .toList();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
