package io.sluice.storage.crash;

import io.sluice.storage.Await;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.durability.SegmentSyncer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule "a failed force is final" (docs/storage.md) against a close racing the flusher. The queue is deleted while the
 * flusher's force of its segment is under way; the close waits for the segment syncer's monitor having seen no failure
 * yet; then that force fails with EIO. Linux marks the pages it could not write clean, so the close's own force of the
 * same file would succeed: the close must not take that for durability. Found by a review; on the build before the fix
 * the durable index moved to the failed id and the listener was told it.
 */
class CloseAfterFailedForceTest {
    @TempDir
    Path dir;

    @Test
    void aCloseWaitingOnAForceThatFailsReportsNothingDurable() throws Exception {
        CountDownLatch forceEntered = new CountDownLatch(1);
        CountDownLatch failNow = new CountDownLatch(1);
        AtomicInteger segmentForces = new AtomicInteger();
        FileForcer eioOnce = new FileForcer() {
            @Override
            public void force(FileChannel channel, Path file) throws IOException {
                if (file.getFileName().toString().endsWith(".cq4") && segmentForces.incrementAndGet() == 1) {
                    forceEntered.countDown();
                    try {
                        failNow.await(10, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    throw new IOException("EIO (injected)");
                }
                channel.force(false);
            }
        };
        StoreConfig config = StoreConfig.builder().segmentBytes(1 << 20).maxMessageBytes(64 << 10).build();
        try (MessageStore store = MessageStore.open(dir, config, eioOnce)) {
            QueueStore q = store.createQueue("q");
            List<Long> told = new CopyOnWriteArrayList<>();
            q.durabilityListener(told::add);
            long id = q.append(null, new byte[100]);
            CompletableFuture<Long> confirm = q.whenDurable(id);
            assertTrue(forceEntered.await(10, TimeUnit.SECONDS), "the flusher forces the segment");
            Thread deleting = new Thread(() -> store.deleteQueue("q"), "deleting");
            deleting.start();
            Await.until("the close waits for the segment syncer's monitor", () -> waitsForSyncer(deleting));
            failNow.countDown();
            deleting.join(10_000);
            assertFalse(deleting.isAlive(), "the delete ends");
            assertNotNull(q.failure(), "the force failed: the queue is failed");
            assertTrue(confirm.isCompletedExceptionally(), "the waiting confirm fails");
            assertTrue(q.durableIndex() < id, "nothing the failed force covered is durable, but the durable index is "
                    + q.durableIndex() + " (id " + id + "); the listener was told " + told);
            assertFalse(told.contains(id), "the listener is never told the failed id: " + told);
            assertEquals(1, segmentForces.get(), "the close's force is refused before it reaches the file, where an fsync would succeed on pages marked clean");
        }
    }

    private static boolean waitsForSyncer(Thread thread) {
        ThreadInfo info = ManagementFactory.getThreadMXBean().getThreadInfo(thread.getId());
        return info != null && info.getThreadState() == Thread.State.BLOCKED && info.getLockName() != null
                && info.getLockName().startsWith(SegmentSyncer.class.getName());
    }
}
