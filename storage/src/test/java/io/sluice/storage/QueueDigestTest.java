package io.sluice.storage;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

class QueueDigestTest {
    @TempDir
    Path dir;
    private MessageStore store;

    @AfterEach
    void closeStore() {
        if (store != null) {
            store.close();
        }
    }

    private QueueStore queue(String name, long producerId, String... payloads) {
        if (store == null) {
            store = MessageStore.open(dir, StoreConfig.builder().build());
        }
        QueueStore q = store.createQueue(name);
        for (int i = 0; i < payloads.length; i++) {
            q.append(producerId, i, ByteBuffer.allocate(0), ByteBuffer.wrap(payloads[i].getBytes(StandardCharsets.UTF_8)));
        }
        return q;
    }

    @Test
    void shouldGiveEqualStoresEqualDigestsAndTellEveryDifferenceApart() {
        QueueDigest a = QueueDigest.of(queue("a", 7, "one", "two", "three"));
        QueueDigest b = QueueDigest.of(queue("b", 7, "one", "two", "three"));
        assertEquals(a, b);
        assertEquals(3, a.messages());
        assertEquals(a.sha256(), b.sha256());

        assertNotEquals(a.sha256(), QueueDigest.of(queue("payload", 7, "one", "two", "threE")).sha256(), "a payload byte");
        assertNotEquals(a.sha256(), QueueDigest.of(queue("producer", 8, "one", "two", "three")).sha256(), "the producer id");
        assertNotEquals(a.sha256(), QueueDigest.of(queue("more", 7, "one", "two", "three", "three")).sha256(), "one more");
        // The same payloads under other ids: "x" first shifts every id by one.
        QueueStore shifted = queue("shifted", 7, "x", "one", "two", "three");
        shifted.ack(firstId(shifted));
        QueueDigest shiftedDigest = QueueDigest.of(shifted);
        assertEquals(3, shiftedDigest.messages());
        assertNotEquals(a.sha256(), shiftedDigest.sha256(), "the same messages under other ids and sequences");
    }

    @Test
    void shouldLeaveAcknowledgedMessagesOut() {
        QueueStore q = queue("acked", 7, "one", "two");
        QueueDigest before = QueueDigest.of(q);
        q.ack(before.firstId());
        QueueDigest after = QueueDigest.of(q);
        assertEquals(1, after.messages());
        assertEquals(before.lastId(), after.firstId());
        assertNotEquals(before.sha256(), after.sha256());
        QueueStore empty = queue("empty", 7);
        assertEquals(new QueueDigest(0, -1, -1, QueueDigest.of(empty).sha256()), QueueDigest.of(empty));
    }

    private static long firstId(QueueStore q) {
        long[] first = {-1};
        q.forEachUnacked(id -> first[0] = first[0] < 0 ? id : first[0]);
        return first[0];
    }
}
