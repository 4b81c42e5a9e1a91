package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * What a purge removes ("every message not out with a consumer") now that it names what it keeps and acknowledges the
 * rest in ranges: the deliveries out with a consumer and those a transaction holds stay; a message waiting out a
 * redelivery delay goes, and its timer brings nothing back; the count is exact, and what is published afterwards is
 * delivered.
 */
class PurgeKeepsTest {
    private static final int TAG = 3;
    private static final int STORED = 10;
    private static final long REDELIVERY_DELAY_MS = 50;

    @TempDir
    Path dir;

    @Test
    void aPurgeKeepsWhatConsumersAndTransactionsHoldAndRemovesTheRestExactly() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            for (int i = 0; i < STORED; i++) {
                core.publish(q, producer, 1, i, new byte[10 + i]);
            }
            FakeConnection consumer = new FakeConnection("consumer");
            Subscription sub = Subscription.open(q, consumer, TAG, 4, QueueCore.unbounded());
            List<FakeConnection.Delivery> out = consumer.await(FakeConnection.Delivery.class, 4, Duration.ofSeconds(30));
            sub.hold(List.of(IdRange.single(out.get(3).id()))).get(30, TimeUnit.SECONDS); // a transaction's ack holds it
            sub.nack(new NackFrame(TAG, NackAction.REQUEUE_AFTER_DELAY, REDELIVERY_DELAY_MS, List.of(IdRange.single(out.get(0).id()))));

            assertEquals(STORED - 3L, (long) q.purge().get(30, TimeUnit.SECONDS),
                    "all but the two out with the consumer and the one the transaction holds; the one waiting for its redelivery too");
            assertEquals(3L, (long) QueueCore.onLoop(q, q.store()::unackedMessages));
            assertEquals(out.get(1).payload().length + out.get(2).payload().length + out.get(3).payload().length,
                    (long) QueueCore.onLoop(q, q::backlogBytes), "the byte backlog is what was kept");

            // The loop's timers run in deadline order: once this one has, the redelivery's has too.
            q.executor().schedule(() -> null, REDELIVERY_DELAY_MS * 2, TimeUnit.MILLISECONDS).get(30, TimeUnit.SECONDS);
            sub.credit(STORED);
            QueueCore.onLoop(q, () -> null); // the dispatch the credit asked for has run
            assertEquals(4, consumer.deliveries().size(), "nothing purged comes back, the delayed redelivery included");

            core.publish(q, producer, 1, STORED, new byte[] {7});
            FakeConnection.Delivery after = consumer.await(FakeConnection.Delivery.class, 5, Duration.ofSeconds(30)).get(4);
            assertEquals(1, after.payload().length, "a message published after the purge is delivered");
            sub.ack(QueueCore.ack(TAG, out.get(1).id(), out.get(2).id(), after.id()));
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, 1L); // the held one, until its transaction ends
        }
    }
}
