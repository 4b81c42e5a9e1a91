package io.sluice.storage;

import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.segment.FileReleaser;
import io.sluice.storage.segment.SegmentRollCycle;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Rule R4a of docs/replication.md ("The restart is exact"): a record a cluster node stores from a replicated PUBLISH entry
 * carries the entry's position, read back after the store is opened again; a record appended otherwise carries none; and
 * the records from a given id on are read from that id, also when it is the first of a segment.
 */
class ReplicatedRecordPositionTest {
    @TempDir
    Path dir;
    private final FileReleaser releaser = new FileReleaser();
    private QueueStore queue;

    @AfterEach
    void close() {
        if (queue != null) {
            queue.close();
        }
        releaser.close();
    }

    private QueueStore open() {
        return QueueStore.open("q", dir, StoreConfig.builder()
                        .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                        .maxMessageBytes(64 << 10)
                        .durability(DurabilityMode.NEVER)
                        .build(),
                new DiskSpaceGuard(dir, 0), System::currentTimeMillis, () -> { }, null, releaser, FileForcer.FSYNC, false);
    }

    @Test
    void aReplicatedRecordCarriesItsEntrysPositionAcrossAReopen() {
        queue = open();
        ByteBuffer message = ByteBuffer.wrap(new byte[1000]);
        long plain = queue.append(7, 1, null, message.duplicate());
        List<Long> ids = new ArrayList<>();
        long position = 5L << 16;
        while (queue.segmentNumbers().size() < 2) {
            position++;
            ids.add(queue.appendReplicated(position, 7, ids.size() + 2, message, 0, 0, 0, 1000));
        }
        long firstOfSecond = ids.get(ids.size() - 1);
        assertEquals(0, SegmentRollCycle.INSTANCE.toSequenceNumber(firstOfSecond), "the last record opens the second segment");
        queue.close();

        queue = open();
        List<Long> positions = new ArrayList<>();
        queue.forEachRecordAfter(-1, (id, record) -> positions.add(record.logPosition()));
        assertEquals(-1L, positions.get(0), "record " + plain + " came from no entry");
        for (int i = 0; i < ids.size(); i++) {
            assertEquals((5L << 16) + i + 1, positions.get(i + 1));
        }
        List<Long> from = new ArrayList<>();
        queue.forEachRecordFrom(firstOfSecond, (id, record) -> from.add(id));
        assertEquals(List.of(firstOfSecond), from);
        from.clear();
        queue.forEachRecordFrom(ids.get(0), (id, record) -> from.add(id));
        assertEquals(ids, from);
        assertThrows(IllegalArgumentException.class, () -> queue.appendReplicated(-1, 7, 1, message, 0, 0, 0, 1000));
    }
}
