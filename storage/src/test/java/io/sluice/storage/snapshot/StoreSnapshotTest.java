package io.sluice.storage.snapshot;

import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueDigest;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.dedup.ProducerCheckpoint;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link MessageStore#snapshotTo}: what a snapshot holds, and that a store recovered from it is the store as it was. */
class StoreSnapshotTest {
    @TempDir
    Path dir;

    @Test
    void shouldRecoverFromASnapshotTheQueuesAsTheyWereWhenItWasTaken() throws Exception {
        Path data = dir.resolve("data");
        Path snapshot = dir.resolve("snapshot");
        StoreConfig config = StoreConfig.builder().segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes(64 << 10).build();
        QueueDigest busyThen;
        QueueDigest quietThen;
        List<Integer> sealed;
        int writeSegment;
        try (MessageStore store = MessageStore.open(data, config)) {
            QueueStore busy = store.createQueue("busy");
            QueueStore quiet = store.createQueue("quiet");
            byte[] payload = new byte[1000];
            long first = -1;
            for (int i = 0; i < 3000; i++) { // about 3 MB: three segments or more
                long id = busy.append(7, i, ByteBuffer.allocate(0), ByteBuffer.wrap(payload));
                first = first < 0 ? id : first;
                if (i % 3 == 0) {
                    busy.ack(id);
                }
            }
            quiet.append(8, 0, ByteBuffer.allocate(0), ByteBuffer.wrap("one".getBytes(StandardCharsets.UTF_8)));
            busy.writeProducerCheckpoint(ByteBuffer.wrap("the broker's producer table".getBytes(StandardCharsets.UTF_8)));
            sealed = busy.segmentNumbers();
            writeSegment = sealed.get(sealed.size() - 1);
            assertTrue(sealed.size() >= 3, "segments " + sealed);
            busyThen = QueueDigest.of(busy);
            quietThen = QueueDigest.of(quiet);

            assertEquals(List.of("busy", "quiet"), store.snapshotTo(snapshot));

            // The live store goes on; the snapshot does not see it.
            busy.ackRange(first, busy.writtenIndex());
            busy.append(7, 3000, ByteBuffer.allocate(0), ByteBuffer.wrap(payload));
            quiet.append(8, 1, ByteBuffer.allocate(0), ByteBuffer.wrap("two".getBytes(StandardCharsets.UTF_8)));
            assertNotEquals(busyThen, QueueDigest.of(busy));
        }

        Path segments = snapshot.resolve("queues/busy/segments");
        for (int segment : sealed) {
            Path copy = SegmentFiles.file(segments, segment);
            Path original = SegmentFiles.file(data.resolve("queues/busy/segments"), segment);
            assertTrue(Files.exists(copy), "segment " + segment + " is in the snapshot");
            boolean linked = Files.exists(original)
                    && inode(copy).equals(inode(original));
            assertEquals(segment < writeSegment && Files.exists(original), linked,
                    "segment " + segment + ": sealed ones are hard links, the one being written a copy");
        }
        assertTrue(Files.exists(segments.resolve("metadata.cq4t")));
        assertTrue(Files.exists(snapshot.resolve("queues/busy/acks/acks.journal")));
        assertEquals("the broker's producer table",
                Files.readString(snapshot.resolve("queues/busy").resolve(ProducerCheckpoint.FILE)));
        try (var files = Files.walk(snapshot)) {
            assertFalse(files.anyMatch(f -> f.getFileName().toString().endsWith(".tmp")), "no temporary files");
        }

        try (MessageStore recovered = MessageStore.open(snapshot, config)) {
            assertEquals(busyThen, QueueDigest.of(recovered.queue("busy")));
            assertEquals(quietThen, QueueDigest.of(recovered.queue("quiet")));
            assertEquals(2000, QueueDigest.of(recovered.queue("busy")).messages());
        }
        try (MessageStore live = MessageStore.open(data, config)) {
            assertEquals(1, QueueDigest.of(live.queue("busy")).messages(), "the live store kept what came after the snapshot");
            assertEquals(2, QueueDigest.of(live.queue("quiet")).messages());
        }
    }

    private static Object inode(Path file) throws Exception {
        return Files.readAttributes(file, BasicFileAttributes.class).fileKey();
    }
}
