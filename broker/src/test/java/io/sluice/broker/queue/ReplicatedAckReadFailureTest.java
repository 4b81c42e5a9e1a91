package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.StorageFailedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A cluster node applies replicated acks (rule R5 of docs/replication.md) by reading each message it acknowledges for
 * the bytes its backlog loses. A read that fails otherwise than on a damaged record (the store failed) leaves that one
 * message as it was, and the entry's other acks are applied, stored and counted; then the node stops applying the log
 * (rule R2: every other node acknowledged the message), naming the queue and the message. Found by a review: the failure
 * left the apply loop, so the entry's later acks were not applied at all, and the earlier ones were off the backlog and
 * the tracked set but never handed to the store, nor counted.
 */
class ReplicatedAckReadFailureTest {
    private static final int TAG = 3;
    @TempDir
    Path dir;

    /** A short range (a consumer's acks), applied one id after the other. */
    @Test
    void aShortRangeAppliesEveryAckButTheUnreadableOneAndStopsTheNode() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("replicated", QueueSettings.EMPTY);
            List<Long> ids = publish(core, q, 10);
            failReadsOf(q, ids.get(3));

            q.applyReplicatedAcks(List.of(new IdRange(ids.get(0), ids.get(5))));
            QueueCore.onLoop(q, () -> null);

            assertEquals(5L, (long) QueueCore.onLoop(q, q.store()::unackedMessages),
                    "the five readable ones of the entry are acknowledged in the store");
            assertFalse(QueueCore.onLoop(q, () -> q.store().isAcked(ids.get(3))), "the unreadable one is left as it was");
            assertEquals(5L, (long) QueueCore.onLoop(q, q::backlogBytes), "the byte backlog is what the store keeps");
            assertEquals(5L, q.counters().get().acked(), "the five are counted");
            assertStopped(core, ids.get(3));
        }
    }

    /**
     * A long range (a purge's, rule R7), applied with one store call after what the node tracks in it, one by one: the
     * unreadable one is tracked here (given back by a consumer that left), and is kept out of the store call.
     */
    @Test
    void aLongRangeAppliesEveryAckButTheUnreadableOneAndStopsTheNode() throws Exception {
        int stored = 100;
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("replicated", QueueSettings.EMPTY);
            List<Long> ids = publish(core, q, stored);
            FakeConnection consumer = new FakeConnection("consumer");
            Subscription sub = Subscription.open(q, consumer, TAG, 2, QueueCore.unbounded());
            consumer.await(FakeConnection.Delivery.class, 2, Duration.ofSeconds(30));
            sub.close().get(30, TimeUnit.SECONDS);
            QueueCore.awaitOnLoop(q, q::redelivered, 2L); // both given back: due again, tracked
            failReadsOf(q, ids.get(1));

            q.applyReplicatedAcks(List.of(new IdRange(ids.get(0), ids.get(stored - 1))));
            QueueCore.onLoop(q, () -> null);

            assertEquals(1L, (long) QueueCore.onLoop(q, q.store()::unackedMessages), "all but the unreadable one are acknowledged");
            assertFalse(QueueCore.onLoop(q, () -> q.store().isAcked(ids.get(1))), "the unreadable one is left as it was");
            assertEquals(1L, (long) QueueCore.onLoop(q, q::backlogBytes), "the byte backlog is what the store keeps");
            assertEquals(stored - 1L, q.counters().get().acked());
            assertStopped(core, ids.get(1));
        }
    }

    /** Publishes {@code messages} one-byte messages into {@code q}; returns their ids, in order. */
    private static List<Long> publish(QueueCore core, BrokerQueue q, int messages) throws Exception {
        byte[][] payloads = new byte[messages][];
        for (int i = 0; i < messages; i++) {
            payloads[i] = new byte[] {(byte) i};
        }
        core.publish(q, new FakeConnection("producer"), 1, 0, payloads);
        QueueCore.awaitOnLoop(q, q.store()::unackedMessages, (long) messages);
        List<Long> ids = new ArrayList<>();
        q.store().forEachUnacked(ids::add);
        return ids;
    }

    /** Reads of message {@code id} fail from now on, as a failing store's would ({@link BrokerQueue#readsThrough}). */
    private static void failReadsOf(BrokerQueue q, long id) throws Exception {
        QueueCore.onLoop(q, () -> {
            q.readsThrough(read -> {
                if (read == id) {
                    throw new StorageFailedException("a read of queue 'replicated' faulted (injected)", null);
                }
                return q.store().read(read);
            });
            return null;
        });
    }

    /** The node stopped applying the log, saying which queue and message and why. */
    private static void assertStopped(QueueCore core, long unreadable) {
        String reason = core.queues.applyHalt().reason();
        assertNotNull(reason, "the node stops applying the log");
        assertTrue(reason.contains("queue 'replicated'"), reason);
        assertTrue(reason.contains("message " + unreadable), reason);
        assertTrue(reason.contains("faulted (injected)"), reason);
    }
}
