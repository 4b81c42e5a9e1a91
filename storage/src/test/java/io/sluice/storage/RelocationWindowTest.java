package io.sluice.storage;

import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.segment.FileReleaser;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A reader opened while a relocated segment is still on disk (between the copy and the delete, rule R4
 * of docs/storage.md; or after a restart that interrupted that window) starts before that segment and
 * walks through it. The original slots there were emptied by the relocation, so the reader must skip
 * them and return each message once, from its copy.
 */
@Timeout(60)
class RelocationWindowTest {
    @TempDir
    Path dir;
    private QueueStore queue;
    private FileReleaser releaser;

    @AfterEach
    void close() {
        if (queue != null) {
            queue.close();
        }
        if (releaser != null) {
            releaser.close();
        }
    }

    private static byte[] payload(long seq) {
        return ByteBuffer.allocate(1000).order(ByteOrder.LITTLE_ENDIAN).putLong(seq).array();
    }

    private static long seqOf(StoredMessage m) {
        return ByteBuffer.wrap(m.payloadBytes()).order(ByteOrder.LITTLE_ENDIAN).getLong();
    }

    @Test
    void aReaderOpenedBeforeTheRelocatedSegmentIsDeletedReturnsEachMessageOnce() throws Exception {
        CountDownLatch inForce = new CountDownLatch(1);
        CountDownLatch readerOpened = new CountDownLatch(1);
        // The pass forces the copies' segment without the queue's lock (step 4): it waits there for the reader.
        FileForcer holdTheReclaimersForce = (channel, file) -> {
            if (Thread.currentThread().getName().equals("reclaimer")) {
                inForce.countDown();
                try {
                    readerOpened.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            FileForcer.FSYNC.force(channel, file);
        };
        releaser = new FileReleaser();
        queue = QueueStore.open("q", dir, StoreConfig.builder()
                        .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes(64 << 10)
                        .durability(DurabilityMode.NEVER).relocateAfterMs(0).build(),
                new DiskSpaceGuard(dir, 0), System::currentTimeMillis, () -> { }, null, releaser, holdTheReclaimersForce, false);
        Map<Long, Long> idOfSeq = new HashMap<>();
        long seq = 0;
        while (queue.segmentNumbers().size() < 3) {
            idOfSeq.put(seq, queue.append(null, payload(seq)));
            seq++;
        }
        int first = queue.segmentNumbers().get(0);
        int second = queue.segmentNumbers().get(1);
        // Segment 0 stays mostly live (no relocation); segment 1 keeps one straggler, which is relocated.
        long straggler = -1;
        List<Long> toAck = new ArrayList<>();
        for (Map.Entry<Long, Long> e : idOfSeq.entrySet()) {
            if ((int) (e.getValue() >>> 32) == second) {
                if (straggler < 0) {
                    straggler = e.getKey();
                } else {
                    toAck.add(e.getValue());
                }
            }
        }
        long[] acks = toAck.stream().mapToLong(Long::longValue).toArray();
        queue.ackAll(acks, acks.length);

        Thread reclaimer = new Thread(() -> queue.reclaim(System.nanoTime() + 10_000_000_000L), "reclaimer");
        reclaimer.start();
        assertTrue(inForce.await(30, TimeUnit.SECONDS), "the pass copied the straggler and is forcing the copy");
        Map<Long, Integer> reads = new HashMap<>();
        try (QueueReader reader = queue.openReader()) {
            readerOpened.countDown();
            reclaimer.join();
            assertEquals(1, queue.stats().relocatedMessages(), "the straggler of segment " + second + " was copied");
            for (StoredMessage m = reader.next(); m != null; m = reader.next()) {
                reads.merge(seqOf(m), 1, Integer::sum);
            }
        }
        assertTrue(queue.segmentNumbers().contains(first));
        long expected = idOfSeq.size() - acks.length;
        assertEquals(expected, reads.size(), "every unacknowledged message read");
        reads.forEach((s, n) -> assertEquals(1, n, "message " + s + " read " + n + " times"));
        assertEquals(1, reads.get(straggler));
    }
}
