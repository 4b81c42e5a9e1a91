package io.sluice.storage;

import io.sluice.storage.ack.AckJournal;
import io.sluice.storage.ack.AckLog;
import io.sluice.storage.ack.AckResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Issue 14, item 2.6: the flusher's periodic msync of the ack journal must not hold the queue's lock,
 * or appends, acks and dispatch wait for it. The test makes one force last as long as it likes: it
 * holds the journal's mapping lock (which a force takes), waits until the flusher is blocked there in
 * its force, and then appends and acks with a deadline.
 */
class JournalForceOutsideLockTest {
    private static final String FLUSHER = "sluice-storage-flusher";

    @TempDir
    Path dir;

    @Test
    void appendsAndAcksDoNotWaitForTheAckJournalsForce() throws Exception {
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().syncIntervalMs(1).reservedDiskBytes(64L << 20).build())) {
            QueueStore queue = store.createQueue("q");
            long first = queue.append(null, "before".getBytes(StandardCharsets.UTF_8));
            Object mappingLock = mappingLockOf(queue);
            CountDownLatch held = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            Thread holder = new Thread(() -> {
                synchronized (mappingLock) {
                    held.countDown();
                    try {
                        release.await(60, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }, "slow-force");
            holder.start();
            try {
                assertTrue(held.await(10, TimeUnit.SECONDS));
                Await.until("the flusher is in the journal's force, blocked", JournalForceOutsideLockTest::flusherBlockedInForce, 10, TimeUnit.SECONDS);
                CompletableFuture<AckResult> work = CompletableFuture.supplyAsync(() -> {
                    queue.append(null, "during".getBytes(StandardCharsets.UTF_8));
                    return queue.ack(first);
                });
                try {
                    assertEquals(AckResult.NEWLY_ACKED, work.get(5, TimeUnit.SECONDS));
                } catch (TimeoutException e) {
                    fail("an append and an ack waited over 5 s for the ack journal's force, which holds the queue's lock");
                }
            } finally {
                release.countDown();
                holder.join(TimeUnit.SECONDS.toMillis(30));
            }
        }
    }

    private static boolean flusherBlockedInForce() {
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            if (e.getKey().getName().equals(FLUSHER) && e.getKey().getState() == Thread.State.BLOCKED) {
                for (StackTraceElement frame : e.getValue()) {
                    if (frame.getClassName().equals(AckJournal.class.getName()) && frame.getMethodName().equals("force")) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /** The lock {@link AckJournal#force()} takes; reached by reflection because nothing else needs it. */
    private static Object mappingLockOf(QueueStore queue) throws ReflectiveOperationException {
        AckLog ackLog = (AckLog) field(QueueStore.class, "ackLog").get(queue);
        AckJournal journal = (AckJournal) field(AckLog.class, "journal").get(ackLog);
        return field(AckJournal.class, "mappingLock").get(journal);
    }

    private static Field field(Class<?> type, String name) throws NoSuchFieldException {
        Field field = type.getDeclaredField(name);
        field.setAccessible(true);
        return field;
    }
}
