package io.sluice.storage;

import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.readahead.ReaderCursor;
import io.sluice.storage.ack.AckResult;
import io.sluice.storage.segment.FileReleaser;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class QueueStoreTest {
    @TempDir
    Path dir;
    private MessageStore store;

    @AfterEach
    void closeStore() {
        if (store != null) {
            store.close();
        }
    }

    private MessageStore open(StoreConfig config) {
        store = MessageStore.open(dir, config);
        return store;
    }

    private static byte[] payload(int i) {
        return ("message-" + i).getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void shouldReadBackEveryAppendedMessageInOrderWithHeadersAndProducerIdentity() {
        QueueStore q = open(StoreConfig.builder().build()).createQueue("orders");
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            ids.add(q.append(7, i, ByteBuffer.wrap(("h" + i).getBytes(StandardCharsets.UTF_8)), ByteBuffer.wrap(payload(i))));
        }
        try (QueueReader reader = q.openReader()) {
            for (int i = 0; i < 1000; i++) {
                StoredMessage m = reader.next();
                assertNotNull(m, "message " + i);
                assertEquals(ids.get(i), m.id());
                assertEquals(7, m.producerId());
                assertEquals(i, m.producerSequence());
                assertArrayEquals(payload(i), m.payloadBytes());
                assertArrayEquals(("h" + i).getBytes(StandardCharsets.UTF_8), m.headersBytes());
            }
            assertNull(reader.next());
        }
        assertEquals(1000, q.stats().unackedMessages());
    }

    @Test
    void shouldStoreMessagesGivenAsRegionsOfOneBufferWithoutMovingIt() {
        QueueStore q = open(StoreConfig.builder().build()).createQueue("frames");
        // Like a PUBLISH frame: [junk][headers 0][payload 0][headers 1][payload 1], read by absolute offsets.
        ByteBuffer frame = ByteBuffer.allocateDirect(64);
        frame.put(new byte[] {9, 9, 9}).put("h0".getBytes(StandardCharsets.UTF_8)).put(payload(0))
                .put("hdr1".getBytes(StandardCharsets.UTF_8)).put(payload(1)).flip().position(2);
        long first = q.append(5, 10, frame, 3, 2, 5, payload(0).length);
        long second = q.append(5, 11, frame, 5 + payload(0).length, 4, 9 + payload(0).length, payload(1).length);
        assertEquals(2, frame.position(), "the source's position is left alone");
        StoredMessage m = q.read(first);
        assertArrayEquals("h0".getBytes(StandardCharsets.UTF_8), m.headersBytes());
        assertArrayEquals(payload(0), m.payloadBytes());
        assertEquals(10, m.producerSequence());
        m = q.read(second);
        assertArrayEquals("hdr1".getBytes(StandardCharsets.UTF_8), m.headersBytes());
        assertArrayEquals(payload(1), m.payloadBytes());
        assertEquals(11, m.producerSequence());
    }

    @Test
    void shouldWakeTheFlusherOnlyWhenSomeoneWaitsForAForce() throws java.io.IOException {
        for (DurabilityMode mode : DurabilityMode.values()) {
            java.util.concurrent.atomic.AtomicInteger wakes = new java.util.concurrent.atomic.AtomicInteger();
            Path queueDir = dir.resolve("wake-" + mode);
            Files.createDirectories(queueDir);
            try (FileReleaser releaser = new FileReleaser()) {
                QueueStore q = QueueStore.open("wake", queueDir, StoreConfig.builder().durability(mode).build(),
                        new DiskSpaceGuard(queueDir, 0), System::currentTimeMillis, wakes::incrementAndGet, null, releaser, FileForcer.FSYNC, false);
                try {
                    long last = -1;
                    for (int i = 0; i < 100; i++) {
                        last = q.append(null, payload(i));
                    }
                    assertEquals(0, wakes.get(), "an append wakes no one under " + mode + " (rule \"force what is awaited\")");
                    q.demandDurable(last); // a confirm of the last, as the broker's publish path asks for it
                } finally {
                    q.close();
                }
            }
            // `always` starts a group commit when a confirm waits; `never` and `interval` have nothing for the flusher to do.
            assertEquals(mode == DurabilityMode.ALWAYS ? 1 : 0, wakes.get(), "wake-ups under " + mode);
        }
    }

    @Test
    void shouldSkipAcknowledgedMessagesAndReadOneById() {
        QueueStore q = open(StoreConfig.builder().build()).createQueue("q");
        long[] ids = new long[10];
        for (int i = 0; i < 10; i++) {
            ids[i] = q.append(null, payload(i));
        }
        assertEquals(AckResult.NEWLY_ACKED, q.ack(ids[3]));
        assertEquals(AckResult.ALREADY_ACKED, q.ack(ids[3]));
        assertEquals(3, q.ackRange(ids[5], ids[7]));
        List<Long> seen = new ArrayList<>();
        try (QueueReader reader = q.openReader()) {
            for (StoredMessage m = reader.next(); m != null; m = reader.next()) {
                seen.add(m.id());
            }
        }
        assertEquals(List.of(ids[0], ids[1], ids[2], ids[4], ids[8], ids[9]), seen);
        assertArrayEquals(payload(9), q.read(ids[9]).payloadBytes());
        assertNull(q.read(ids[6]), "an acknowledged message is not readable by id");
        assertEquals(6, q.unackedMessages());
    }

    @Test
    void shouldAckABatchOfIdsUnderOneCallCountingOnlyNewAcks() {
        QueueStore q = open(StoreConfig.builder().build()).createQueue("q");
        long[] ids = new long[10];
        for (int i = 0; i < 10; i++) {
            ids[i] = q.append(null, payload(i));
        }
        q.ack(ids[2]);
        assertEquals(4, q.ackAll(new long[] {ids[0], ids[2], ids[4], ids[6], ids[8], 0}, 5));
        assertEquals(5, q.unackedMessages());
        List<Long> left = new ArrayList<>();
        q.forEachUnacked(left::add);
        assertEquals(List.of(ids[1], ids[3], ids[5], ids[7], ids[9]), left);
    }

    @Test
    void shouldLeaveAReaderNearTheTailToReadWhatWasJustWritten() throws Exception {
        MessageStore messages = open(StoreConfig.builder().readAheadMessages(1_000).build());
        QueueStore near = messages.createQueue("near");
        QueueStore far = messages.createQueue("far");
        for (int i = 0; i < ReaderCursor.MIN_LAG - 1; i++) {
            near.append(null, payload(i));
        }
        long[] farIds = new long[ReaderCursor.MIN_LAG + 2_000];
        for (int i = 0; i < farIds.length; i++) {
            farIds[i] = far.append(null, payload(i));
        }
        try (QueueReader nearTail = near.openReader(); QueueReader lagging = far.openReader()) {
            // The store's one read-ahead thread serves both; `lagging`, registered after `nearTail`,
            // reaching its budget means a whole turn has passed over both readers.
            Await.until("read-ahead serves the lagging reader", () -> lagging.readAheadIndex() >= farIds[999]);
            assertEquals(-1, nearTail.readAheadIndex(), "nothing touched ahead of a reader near the tail");
        }
    }

    @Test
    void shouldTouchALaggingReadersComingRecordsOnTheReadAheadThreadWithinItsBudget() throws Exception {
        QueueStore q = open(StoreConfig.builder().readAheadMessages(1_000).build()).createQueue("q");
        long[] ids = new long[ReaderCursor.MIN_LAG + 6_000]; // still lagging after reading 3,000
        for (int i = 0; i < ids.length; i++) {
            ids[i] = q.append(null, payload(i));
        }
        try (QueueReader reader = q.openReader()) {
            Await.until("read-ahead reaches its budget", () -> reader.readAheadIndex() >= ids[999]);
            assertEquals(ids[999], reader.readAheadIndex(), "no further than the budget of 1,000 messages ahead");
            for (int i = 0; i < 2_000; i++) {
                assertEquals(ids[i], reader.next().id());
            }
            Await.until("read-ahead follows the reader", () -> reader.readAheadIndex() >= ids[2_999]);
            assertTrue(reader.readAheadIndex() <= ids[2_999], "still within the budget: " + reader.readAheadIndex());
            for (int i = 2_000; i < ids.length; i++) {
                assertArrayEquals(payload(i), reader.next().payloadBytes(), "message " + i);
            }
            assertNull(reader.next());
        }
    }

    @Test
    void shouldRefuseAnOversizedMessageAndWriteNothing() {
        QueueStore q = open(StoreConfig.builder().maxMessageBytes(1024).build()).createQueue("q");
        MessageTooLargeException e = assertThrows(MessageTooLargeException.class, () -> q.append(null, new byte[1025]));
        assertTrue(e.getMessage().contains("1025") && e.getMessage().contains("1024"), e.getMessage());
        assertEquals(-1, q.writtenIndex());
        assertEquals(0, q.stats().appendedMessages());
    }

    @Test
    void shouldValidateQueueNames() {
        MessageStore s = open(StoreConfig.builder().build());
        assertThrows(IllegalArgumentException.class, () -> s.createQueue(""));
        assertThrows(IllegalArgumentException.class, () -> s.createQueue("../etc"));
        assertThrows(IllegalArgumentException.class, () -> s.createQueue("a b"));
        assertThrows(IllegalArgumentException.class, () -> s.createQueue("x".repeat(QueueNames.MAX_LENGTH + 1)));
        s.createQueue("ok.name_1-2");
        assertEquals(List.of("ok.name_1-2"), s.listQueues());
    }

    @Test
    void shouldCreateListAndDeleteQueues() throws Exception {
        MessageStore s = open(StoreConfig.builder().build());
        s.createQueue("b").append(null, payload(1));
        s.createQueue("a");
        assertEquals(List.of("a", "b"), s.listQueues());
        s.deleteQueue("b");
        assertEquals(List.of("a"), s.listQueues());
        assertFalse(Files.exists(dir.resolve("queues").resolve("b")));
        assertThrows(QueueNotFoundException.class, () -> s.queue("b"));
        assertThrows(QueueNotFoundException.class, () -> s.deleteQueue("b"));
    }

    @Test
    void shouldLeaveTheFilesOfADeletedQueueToTheReleaserThread() throws Exception {
        java.util.concurrent.CountDownLatch held = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.ExecutorService releaserThread = java.util.concurrent.Executors.newSingleThreadExecutor();
        releaserThread.execute(() -> {
            try {
                held.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        Path data = dir.resolve("held");
        MessageStore s = MessageStore.open(data, StoreConfig.builder().build(), System::currentTimeMillis,
                new FileReleaser(releaserThread));
        try {
            s.createQueue("b").append(null, payload(1));
            s.deleteQueue("b");
            List<Path> doomed;
            try (var list = Files.list(data.resolve("queues"))) {
                doomed = list.filter(p -> p.getFileName().toString().startsWith("b.deleted-")).toList();
            }
            assertEquals(1, doomed.size(), "renamed at once; its files wait for the releaser");
            assertEquals(0, s.createQueue("b").unackedMessages(), "a new queue of the same name starts empty");

            held.countDown();
            Await.until("the releaser deletes the old directory", () -> !Files.exists(doomed.get(0)));
        } finally {
            held.countDown();
            s.close();
        }
    }

    @Test
    void shouldRefuseASecondStoreOnTheSameDirectory() {
        open(StoreConfig.builder().build());
        StorageException e = assertThrows(StorageException.class, () -> MessageStore.open(dir, StoreConfig.builder().build()));
        assertTrue(e.getMessage().contains("in use"), e.getMessage());
    }

    @Test
    void shouldKeepUnackedMessagesAndAckStateAcrossRestart() {
        QueueStore q = open(StoreConfig.builder().build()).createQueue("q");
        long[] ids = new long[100];
        for (int i = 0; i < 100; i++) {
            ids[i] = q.append(null, payload(i));
        }
        for (int i = 0; i < 100; i += 3) {
            q.ack(ids[i]);
        }
        q.recordDelivery(ids[1], 4);
        store.close();
        store = null;

        QueueStore reopened = open(StoreConfig.builder().build()).queue("q");
        List<Long> unacked = new ArrayList<>();
        reopened.forEachUnacked(unacked::add);
        List<Long> expected = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            if (i % 3 != 0) {
                expected.add(ids[i]);
            }
        }
        assertEquals(expected, unacked);
        assertEquals(4, reopened.deliveryCount(ids[1]));
        try (QueueReader reader = reopened.openReader()) {
            StoredMessage first = reader.next();
            assertEquals(ids[1], first.id());
            assertEquals(4, first.deliveryCount());
        }
        long next = reopened.append(null, payload(100));
        assertTrue(next > ids[99], "ids keep increasing after a restart");
    }

    @Test
    void shouldCompleteDurableFutureOnlyAfterForceInAlwaysMode() throws Exception {
        QueueStore q = open(StoreConfig.builder().durability(DurabilityMode.ALWAYS).build()).createQueue("q");
        assertEquals(0, q.syncCount(), "nothing forced before the first append");
        long id = q.append(null, payload(1));
        assertEquals(id, q.whenDurable(id).get(10, TimeUnit.SECONDS));
        assertTrue(q.durableIndex() >= id);
        assertTrue(q.syncCount() >= 1, "the durable future completed only after a force");
    }

    @Test
    void shouldReportDurabilityOnWriteInNeverMode() {
        QueueStore q = open(StoreConfig.builder().durability(DurabilityMode.NEVER).build()).createQueue("q");
        long id = q.append(null, payload(1));
        assertEquals(id, q.durableIndex());
        assertTrue(q.whenDurable(id).isDone());
        assertEquals(0, q.syncCount(), "never mode leaves writing back to the operating system");
    }
}
