package io.sluice.broker.queue;

import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A purge walks every stored message on the queue's event loop, which other queues and connections share. It took 187
 * bytes of heap a message (two boxed lists of every id and a set of boxed ids; found by a review), about 1.9 GB for a
 * 10 M backlog on a broker whose heap may be 256 MB; it now takes the ids as primitives, once.
 */
class PurgeAllocationTest {
    @TempDir
    Path dir;

    @Test
    void aPurgeAllocatesAFewBytesAMessageOnTheQueuesLoop() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            int frames = 200;
            int perFrame = 1_000;
            byte[][] payloads = new byte[perFrame][];
            Arrays.fill(payloads, new byte[] {1});
            for (int f = 0; f < frames; f++) {
                core.publish(q, producer, 7, 1L + (long) f * perFrame, payloads);
            }
            long n = (long) frames * perFrame;
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, n);
            com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
            long loop = QueueCore.onLoop(q, () -> Thread.currentThread().getId());
            long before = threads.getThreadAllocatedBytes(loop);
            long removed = q.purge().get();
            long allocated = threads.getThreadAllocatedBytes(loop) - before;
            assertEquals(n, removed);
            System.out.println("purge of " + n + " messages: " + allocated + " bytes allocated on the queue's loop, "
                    + allocated / n + " a message");
            assertTrue(allocated < 48 * n, "a purge of " + n + " messages allocated " + allocated + " bytes ("
                    + allocated / n + " a message) on the queue's event loop");
            assertEquals(0L, (long) QueueCore.onLoop(q, q.store()::unackedMessages));
        }
    }
}
