package io.sluice.storage;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A cluster node's apply of a purge's range ({@link QueueStore#ackRangeExcept}): it acknowledges every message of the
 * range but the kept ones and says how many it acknowledged and their bytes, which the backlog loses. The bytes come from
 * whichever of each segment's parts is smaller to read (the records it takes, or the others and the segment's tally),
 * so each way is checked here against the sizes the messages were appended with: ranges that take nearly all of their
 * segments and ranges that take few, over segments this process wrote and, after a reopen, segments it did not.
 */
class AckRangeExceptTest {
    private static final int MESSAGES = 20_000;

    @TempDir
    Path dir;

    @Test
    void theCountAndTheBytesAreThoseOfTheMessagesItAcknowledged() {
        Random random = new Random(7);
        TreeMap<Long, Integer> sizes = new TreeMap<>();
        Set<Long> acked = new HashSet<>();
        try (MessageStore store = open()) {
            QueueStore q = store.createQueue("q");
            for (int i = 0; i < MESSAGES; i++) {
                byte[] headers = new byte[random.nextInt(3)];
                byte[] payload = new byte[random.nextInt(200)];
                sizes.put(q.append(headers, payload), headers.length + payload.length);
            }
            List<Long> ids = new ArrayList<>(sizes.keySet());
            for (int i = 0; i < MESSAGES; i += 1 + random.nextInt(40)) { // scattered acks: holes in every range
                q.ack(ids.get(i));
                acked.add(ids.get(i));
            }
            // Dense: nearly all of the segments it spans, the others read. Sparse: a few, the range's own read.
            checkRange(q, sizes, acked, ids.get(100), ids.get(15_000), keep(ids, random, 100, 15_000, 20));
            checkRange(q, sizes, acked, ids.get(15_001), ids.get(15_400), keep(ids, random, 15_001, 15_400, 5));
        }
        try (MessageStore store = open()) { // sealed segments whose tallies may not know their bytes now
            QueueStore q = store.queue("q");
            List<Long> ids = new ArrayList<>(sizes.keySet());
            checkRange(q, sizes, acked, ids.get(0), ids.get(MESSAGES - 1), keep(ids, random, 0, MESSAGES - 1, 10));
            checkRange(q, sizes, acked, ids.get(0), ids.get(MESSAGES - 1), new long[0]);
            assertEquals(0, q.unackedMessages());
        }
    }

    private MessageStore open() {
        return MessageStore.open(dir, StoreConfig.builder().durability(DurabilityMode.NEVER).segmentBytes(1L << 20).maxMessageBytes(64 << 10).maxMessageBytes(64 << 10)
                .reservedDiskBytes(64L << 20).build());
    }

    /** {@code count} ids among {@code ids[from..to]}, ascending. */
    private static long[] keep(List<Long> ids, Random random, int from, int to, int count) {
        return random.ints(count, from, to + 1).mapToLong(ids::get).distinct().sorted().toArray();
    }

    private static void checkRange(QueueStore q, TreeMap<Long, Integer> sizes, Set<Long> acked, long from, long to, long[] keep) {
        Set<Long> kept = new HashSet<>();
        for (long id : keep) {
            kept.add(id);
        }
        long messages = 0;
        long bytes = 0;
        for (var e : sizes.subMap(from, true, to, true).entrySet()) {
            if (!acked.contains(e.getKey()) && !kept.contains(e.getKey())) {
                messages++;
                bytes += e.getValue();
                acked.add(e.getKey());
            }
        }
        AckedRange done = q.ackRangeExcept(from, to, keep);
        assertEquals(messages, done.messages(), "messages acknowledged in " + from + ".." + to);
        assertEquals(bytes, done.bytes(), "their bytes");
        assertEquals(sizes.size() - acked.size(), q.unackedMessages());
    }
}
