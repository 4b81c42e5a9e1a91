package io.sluice.broker.queue;

import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A purge runs as one task on the queue's event loop, which other queues and connections share, and acknowledges under
 * the store's lock, which the flusher takes for every queue's group commit. It walked every message it removed: their
 * ids under the lock into an array as long as the backlog, then each on the loop, so a large backlog held the loop,
 * the lock (and with it every queue's confirms) and heap in proportion to it (found by a review; docs/broker-core.md
 * has the figures). It now costs what the messages it keeps cost: this test purges a large backlog and bounds the
 * loop's allocation for it far below a long a message (the old walk's array alone was 8 bytes a message). The loop's
 * CPU time is printed, not asserted: a timing belongs in a benchmark, and on a shared machine it is noise.
 */
class PurgeCostTest {
    private static final int BACKLOG = 500_000;
    /**
     * Far below a long a message, far above the purge's own allocation: the loop's count also takes in whatever else
     * ran on it meanwhile.
     */
    private static final long MAX_LOOP_ALLOCATED_BYTES = 1 << 20;

    @TempDir
    Path dir;

    @Test
    void aPurgeOfALargeBacklogCostsTheLoopWhatAnEmptyQueueCosts() throws Exception {
        QueueCore.writeBacklog(dir, "big", BACKLOG);
        Map<String, String> config = new HashMap<>();
        config.put("storage.durability", "always");
        try (QueueCore core = new QueueCore(dir, config)) {
            BrokerQueue q = core.queues.get("big");
            BrokerQueue other = core.queues.declare("other", QueueSettings.EMPTY);
            assertEquals(q.executor(), other.executor(), "one loop serves both queues");
            assertEquals(0L, (long) other.purge().get(30, TimeUnit.SECONDS)); // the purge's classes loaded and its code run once

            com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            long loop = QueueCore.onLoop(q, () -> Thread.currentThread().getId());
            long cpuBefore = threads.getThreadCpuTime(loop);
            long allocatedBefore = threads.getThreadAllocatedBytes(loop);
            long removed = q.purge().get(30, TimeUnit.SECONDS);
            long cpu = threads.getThreadCpuTime(loop) - cpuBefore;
            long allocated = threads.getThreadAllocatedBytes(loop) - allocatedBefore;

            assertEquals(BACKLOG, removed, "the count is exact");
            assertEquals(0L, (long) QueueCore.onLoop(q, q.store()::unackedMessages));
            System.out.println("purge of " + BACKLOG + " messages: " + cpu / 1000 + " us of the loop's CPU, "
                    + allocated + " bytes allocated on it");
            assertTrue(allocated < MAX_LOOP_ALLOCATED_BYTES, "a purge of " + BACKLOG + " messages allocated " + allocated
                    + " bytes on the queue's event loop");

            // The other queue on the loop is served as before: its publish is stored and confirmed once durable.
            FakeConnection producer = new FakeConnection("producer");
            core.publish(other, producer, 7, 1, new byte[] {2});
            producer.await(ConfirmFrame.class, 1, Duration.ofSeconds(30));
        }
    }
}
