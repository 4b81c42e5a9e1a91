package io.sluice.broker.queue;

import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Resends that the producer table recognises (P1, docs/broker-core.md) on the queue core: they cost
 * no backlog, so a slowed queue confirms them without spending the tokens its consumers' acks earned
 * (C2), and they are counted as duplicates, not as stored or confirmed messages.
 */
class DuplicatePublishTest {
    private static final long PRODUCER = 7;
    private static final int TAG = 1;
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** Confirms go out as soon as the append returns, so what holds one back is the flow state alone. */
    private static final Map<String, String> CONFIG = Map.of("storage.durability", "never");

    @TempDir
    Path dir;

    private static boolean confirmed(List<ConfirmFrame> confirms, long sequence) {
        for (ConfirmFrame c : confirms) {
            for (IdRange r : c.sequences()) {
                if (c.producerId() == PRODUCER && r.from() <= sequence && sequence <= r.to()) {
                    return true;
                }
            }
        }
        return false;
    }

    private static void awaitConfirm(FakeConnection producer, long sequence) throws InterruptedException {
        producer.await(ConfirmFrame.class, list -> confirmed(list, sequence), WAIT, "the confirm of sequence " + sequence);
    }

    @Test
    void aSlowedQueueConfirmsAResendWithoutSpendingTheTokensOfAcks() throws Exception {
        try (QueueCore core = new QueueCore(dir, CONFIG)) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.builder().quotaMessages(20, 1_000).build());
            FakeConnection producer = new FakeConnection("producer");
            for (long s = 1; s <= 25; s++) {
                core.publish(q, producer, PRODUCER, s, new byte[]{(byte) s});
            }
            // Slowed from the 20th on: 20..25 wait for acks (C2).
            awaitConfirm(producer, 19);
            assertEquals(FlowState.SLOWED, QueueCore.onLoop(q, q::flowState));

            FakeConnection consumer = new FakeConnection("consumer");
            Subscription sub = Subscription.open(q, consumer, TAG, 25, QueueCore.unbounded());
            List<FakeConnection.Delivery> delivered = consumer.await(FakeConnection.Delivery.class, 25, WAIT);
            for (int i = 0; i < 7; i++) { // six acks release 20..25, the seventh leaves one token
                sub.ack(QueueCore.ack(TAG, delivered.get(i).id()));
            }
            awaitConfirm(producer, 25);
            assertEquals(FlowState.SLOWED, QueueCore.onLoop(q, q::flowState), "a backlog of 18 keeps the queue slowed");

            core.publish(q, producer, PRODUCER, 5, new byte[]{5}); // a resend
            awaitConfirm(producer, 5);
            core.publish(q, producer, PRODUCER, 26, new byte[]{26});
            awaitConfirm(producer, 26); // spends the token the resend did not
            core.publish(q, producer, PRODUCER, 6, new byte[]{6});
            awaitConfirm(producer, 6); // no token left, none needed
            assertEquals(FlowState.SLOWED, QueueCore.onLoop(q, q::flowState));
        }
    }

    @Test
    void aResendCountsAsADuplicateAndNotAsAConfirmedMessage() throws Exception {
        try (QueueCore core = new QueueCore(dir, CONFIG)) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            core.publish(q, producer, PRODUCER, 1, new byte[]{1}, new byte[]{2}, new byte[]{3});
            core.publish(q, producer, PRODUCER, 2, new byte[]{2}, new byte[]{3});
            producer.await(ConfirmFrame.class, 2, WAIT);
            QueueSnapshot.Counters counters = q.snapshot().get().counters();
            assertEquals(3, counters.published(), "sluice_queue_published_messages_total");
            assertEquals(3, counters.confirmed(), "sluice_queue_confirmed_messages_total: stored messages confirmed");
            assertEquals(2, counters.duplicates(), "sluice_queue_duplicates_total");
            assertEquals(counters, q.counters().get(), "the counters alone, as rates read them, are the snapshot's");
        }
    }
}
