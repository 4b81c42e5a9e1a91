package io.sluice.storage.durability;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.segment.FileReleaser;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule "force what is awaited" of {@link Durability}, driven by hand (no flusher thread, the clock the test's): under
 * {@code always} a turn of the flusher forces a queue only when someone waits for an id not durable yet, or when appends
 * no one waits for have waited a sync interval. On main every turn forced whatever was written.
 */
class DurabilityDemandTest {
    private static final long SYNC_INTERVAL_MS = 1_000;

    @TempDir
    Path dir;
    private final FileReleaser releaser = new FileReleaser();
    private final AtomicInteger wakeUps = new AtomicInteger();
    private SegmentSyncer syncer;
    private Durability durability;

    @BeforeEach
    void open() throws Exception {
        Path segments = Files.createDirectories(dir.resolve("queues/q/segments"));
        Files.createFile(SegmentFiles.file(segments, 0));
        Files.createFile(SegmentFiles.file(segments, 1));
        syncer = new SegmentSyncer(segments, releaser, FileForcer.FSYNC);
        durability = new Durability("q", DurabilityMode.ALWAYS, SYNC_INTERVAL_MS, syncer, wakeUps::incrementAndGet, () -> { }, -1);
    }

    @AfterEach
    void close() throws Exception {
        syncer.close();
        releaser.close();
    }

    /**
     * The step before a force (the segment log's dropping of written pages) only saves the force work: when it throws,
     * the force still runs, the appends become durable and the queue is not failed.
     */
    @Test
    void aFailingStepBeforeTheForceFailsNeitherTheForceNorTheQueue() {
        AtomicInteger runs = new AtomicInteger();
        Durability failingStep = new Durability("q", DurabilityMode.ALWAYS, SYNC_INTERVAL_MS, syncer, () -> { }, () -> {
            runs.incrementAndGet();
            throw new IllegalStateException("the step before the force failed");
        }, -1);
        for (int round = 0; round < 2; round++) {
            failingStep.appended(round);
            CompletableFuture<Long> durable = failingStep.whenDurable(round);
            assertTrue(failingStep.flush(1_000_000_000L + round), "round " + round + " forces");
            assertEquals(round, failingStep.durableIndex());
            assertEquals((long) round, durable.getNow(-2L), "round " + round + ": the awaiting future completes");
        }
        assertEquals(2, runs.get(), "the step ran before each force");
        assertEquals(2, syncer.syncs());
        assertNull(failingStep.failure(), "the queue is not failed");
    }

    @Test
    void anAppendNoOneWaitsForIsForcedWithTheNextAwaitedOne() {
        long t0 = 1_000_000_000L;
        durability.appended(0);
        durability.appended(1);
        assertFalse(durability.flush(t0), "no one waits: no force");
        assertFalse(durability.flush(t0 + TimeUnit.MILLISECONDS.toNanos(SYNC_INTERVAL_MS) - 1), "not yet a sync interval");
        assertEquals(0, syncer.syncs());
        assertEquals(-1, durability.durableIndex());
        assertEquals(0, wakeUps.get(), "an append wakes no one");

        durability.appended(2);
        durability.demand(2);
        assertEquals(1, wakeUps.get(), "a demand wakes the flusher");
        durability.demand(1);
        assertEquals(1, wakeUps.get(), "a lower demand adds nothing");
        assertTrue(durability.flush(t0 + 1));
        assertEquals(1, syncer.syncs(), "one force for the awaited append and the two before it");
        assertEquals(2, durability.durableIndex());

        durability.demand(2);
        assertEquals(1, wakeUps.get(), "a demand of a durable id wakes no one");
        assertFalse(durability.flush(t0 + 2), "nothing written since");
        assertEquals(1, syncer.syncs());
    }

    @Test
    void anAppendNoOneWaitsForIsForcedASyncIntervalAfterTheFlusherFirstSawIt() {
        long t0 = 5_000_000_000L;
        durability.appended(0);
        assertFalse(durability.flush(t0));
        assertFalse(durability.flush(t0 + TimeUnit.MILLISECONDS.toNanos(SYNC_INTERVAL_MS) / 2));
        assertTrue(durability.flush(t0 + TimeUnit.MILLISECONDS.toNanos(SYNC_INTERVAL_MS)), "forced once it waited an interval");
        assertEquals(1, syncer.syncs());
        assertEquals(0, durability.durableIndex());

        durability.appended(1); // the interval starts again from the flusher's next sighting, not from the last force
        assertFalse(durability.flush(t0 + TimeUnit.MILLISECONDS.toNanos(SYNC_INTERVAL_MS) + 1));
        assertEquals(1, syncer.syncs());
    }

    /**
     * The exception: a sealed segment is forced on the flusher's next turn, awaited or not. Until then its channel stays
     * open and reclaim cannot delete its file; with only unawaited appends, acknowledged segments stayed on disk for a
     * sync interval (ReclaimTest's "disk follows the backlog" found 13 segments too many).
     */
    @Test
    void aSealedSegmentIsForcedOnTheNextTurnAwaitedOrNot() {
        long t0 = 9_000_000_000L;
        durability.appended(0);
        assertFalse(durability.flush(t0));
        long firstOfNext = io.sluice.storage.segment.SegmentRollCycle.INSTANCE.toIndex(1, 0);
        durability.sealed(0);
        durability.appended(firstOfNext);
        assertEquals(1, wakeUps.get(), "a seal wakes the flusher");
        assertTrue(durability.flush(t0 + 1), "forced although no one waits");
        assertEquals(firstOfNext, durability.durableIndex());
        assertFalse(durability.flush(t0 + 2), "once");
    }

    @Test
    void whenDurableDemandsItsId() throws Exception {
        durability.appended(0);
        CompletableFuture<Long> durable = durability.whenDurable(0);
        assertEquals(1, wakeUps.get());
        assertFalse(durable.isDone());
        assertTrue(durability.flush(System.nanoTime()));
        assertEquals(0L, durable.get(1, TimeUnit.SECONDS));
        assertEquals(1, syncer.syncs());
    }
}
