package io.sluice.broker.queue;

import ch.qos.logback.classic.Level;
import io.sluice.broker.LogCapture;
import io.sluice.broker.log.RateLimitedLog;
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

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What happens to each message (taken back after its ack timeout, dead-lettered, failing to be) is counted exactly in the
 * queue's metrics; the operator log gets a bounded number of lines about it, not one per message: a consumer that
 * rejects everything, or stops acking thousands of deliveries, used to write as many lines as messages, on the queue's
 * executor, from which the whole event loop's queues are served.
 */
class MessageLogFloodTest {
    private static final int MESSAGES = 300;
    @TempDir
    Path dir;

    private static byte[][] payloads() {
        byte[][] payloads = new byte[MESSAGES][];
        for (int i = 0; i < MESSAGES; i++) {
            payloads[i] = new byte[] {(byte) i};
        }
        return payloads;
    }

    @Test
    void aConsumerRejectingEveryMessageToTheDeadLetterQueueWritesABoundedNumberOfLogLines() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"));
             LogCapture log = LogCapture.of(DeadLetterMoves.class)) {
            BrokerQueue q = core.queues.declare("rejected", QueueSettings.EMPTY);
            core.publish(q, new FakeConnection("producer"), 1, 0, payloads());
            FakeConnection consumer = new FakeConnection("consumer");
            Subscription sub = Subscription.open(q, consumer, 1, MESSAGES, QueueCore.unbounded());
            List<FakeConnection.Delivery> delivered = consumer.await(FakeConnection.Delivery.class, MESSAGES, Duration.ofSeconds(30));
            for (FakeConnection.Delivery d : delivered) {
                sub.nack(new NackFrame(1, NackAction.REJECT_TO_DEAD_LETTER, 0, List.of(IdRange.single(d.id()))));
            }
            QueueCore.awaitOnLoop(q, q::deadLettered, (long) MESSAGES);

            long lines = log.count(Level.INFO, "rejected");
            assertTrue(lines >= 1, "the first moves are still logged");
            assertTrue(lines <= RateLimitedLog.LINES_PER_INTERVAL, lines + " lines for " + MESSAGES + " moves");
        }
    }

    @Test
    void deliveriesTakenBackAfterTheirAckTimeoutAreLoggedPerConsumerNotPerMessage() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"));
             LogCapture log = LogCapture.of(BrokerQueue.class)) {
            BrokerQueue q = core.queues.declare("slow", QueueSettings.builder().ackTimeoutMs(100).build());
            core.publish(q, new FakeConnection("producer"), 1, 0, payloads());
            FakeConnection consumer = new FakeConnection("consumer");
            consumer.onDeliveries(MESSAGES, () -> consumer.writable(false)); // nothing goes out again: one round of timeouts
            Subscription.open(q, consumer, 1, MESSAGES, QueueCore.unbounded());
            consumer.await(FakeConnection.Delivery.class, MESSAGES, Duration.ofSeconds(30));
            QueueCore.awaitOnLoop(q, q::redelivered, (long) MESSAGES);

            long lines = log.count(Level.INFO, "not acknowledged");
            assertTrue(lines >= 1, "the timeouts are still logged");
            assertTrue(lines <= RateLimitedLog.LINES_PER_INTERVAL, lines + " lines for " + MESSAGES + " deliveries taken back");
            assertEquals(MESSAGES, (int) (long) QueueCore.onLoop(q, q::redelivered), "each one counted");
        }
    }
}
