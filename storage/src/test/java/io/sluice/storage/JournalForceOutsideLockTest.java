package io.sluice.storage;

import io.sluice.storage.ack.AckResult;
import io.sluice.storage.ack.HeldForce;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
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
 * its force, and then appends and acks with a deadline. (The flusher's page drop, which runs under the
 * queue's lock, only tries that lock: before it did, a drop that met the held lock blocked there holding
 * the queue's lock, and the flusher never reached its force.)
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
            try (HeldForce force = HeldForce.of(JournalInForce.journalOf(queue))) {
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
            }
        }
    }

    private static boolean flusherBlockedInForce() {
        return Thread.getAllStackTraces().keySet().stream()
                .anyMatch(thread -> thread.getName().equals(FLUSHER) && JournalInForce.waits(thread));
    }
}
