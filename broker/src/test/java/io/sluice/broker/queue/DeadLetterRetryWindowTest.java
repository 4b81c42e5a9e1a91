package io.sluice.broker.queue;

import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Rule "a refused move makes no room" ({@link DeadLetterMoves}): while a message whose dead-letter move failed waits for
 * its retry, {@code max-redelivery-delay-ms}, drop-oldest makes no room. The window is the last failure's: a message that
 * fails again within the window of its first failure keeps drop-oldest from making room for the whole of its second
 * window. Found by a review: the first failure's timer ended the window the second failure had opened.
 */
class DeadLetterRetryWindowTest {
    private static final int TAG = 1;
    private static final long DELAY_MS = 5000;
    @TempDir
    Path dir;

    @Test
    void aSecondFailureWithinTheFirstOnesWindowKeepsItsOwnWindow() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never",
                "queues.max-redelivery-delay-ms", Long.toString(DELAY_MS)))) {
            FakeConnection producer = new FakeConnection("producer");
            // As QueueCore.dropOldestQueueWithAFailedMove: drop-oldest at a hard quota of 5 messages, dead-lettering what it
            // drops to a dead-letter queue that cannot be created.
            BrokerQueue q = core.queues.declare("q", QueueSettings.builder().quotaMessages(0, 5)
                    .overflowPolicy("drop-oldest").set(QueueOptions.DEAD_LETTER_DROPPED, true).build());
            core.queues.limitQueues(1);
            for (int i = 1; i <= 5; i++) {
                core.publish(q, producer, 7, i, new byte[] {(byte) i});
            }
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, 5L);
            long start = System.nanoTime(); // before the first failure
            core.publish(q, producer, 7, 6, new byte[] {6}); // drops message 0, whose move fails: its window opens
            QueueCore.awaitOnLoop(q, q::deadLetterFailures, 1L);
            long firstSeen = QueueCore.onLoop(q, System::nanoTime); // after it: its window ends DELAY_MS after it, at the latest

            FakeConnection consumer = new FakeConnection("consumer");
            Subscription sub = Subscription.open(q, consumer, TAG, 100, QueueCore.unbounded());
            List<FakeConnection.Delivery> delivered = consumer.await(FakeConnection.Delivery.class, 6, Duration.ofSeconds(30));
            assertEquals(0L, delivered.get(0).id());
            sub.nack(new NackFrame(TAG, NackAction.REJECT_TO_DEAD_LETTER, 0, List.of(IdRange.single(0))));
            QueueCore.awaitOnLoop(q, q::deadLetterFailures, 2L); // the second failure of message 0: its second window opens
            assumeTrue(System.nanoTime() - start < TimeUnit.MILLISECONDS.toNanos(DELAY_MS),
                    "the second failure came within the first one's window (a machine too slow for that proves nothing here)");
            // Due once the first window has ended: the loop runs its timers in deadline order, so this runs after the first
            // window's timer, and before the second window's, which opened after firstSeen.
            ScheduledFuture<long[]> probe = QueueCore.onLoop(q, () -> q.executor().schedule(() -> {
                long[] seen = {q.deadLetterFailures(), q.deadLetterRefusing() ? 1 : 0};
                core.publish(q, producer, 7, 7, new byte[] {7}); // at the hard quota: room only if a drop is allowed
                return seen;
            }, firstSeen + TimeUnit.MILLISECONDS.toNanos(DELAY_MS) - System.nanoTime(), TimeUnit.NANOSECONDS));

            long[] seen = probe.get(30, TimeUnit.SECONDS);
            assertEquals(2L, seen[0]);
            assertEquals(1L, seen[1], "drop-oldest may make room again: the first failure's timer ended the second's window");
            List<PublishErrorFrame> refused = producer.await(PublishErrorFrame.class, 1, Duration.ofSeconds(30));
            assertEquals(ErrorCode.QUEUE_BLOCKED, refused.get(0).errorCode());
            assertTrue(refused.get(0).message().contains("dead-letter queue refused"), refused.get(0).message());
            assertEquals(6L, (long) QueueCore.onLoop(q, q.store()::unackedMessages), "nothing dropped, nothing stored past the quota");
            assertEquals(2L, (long) QueueCore.onLoop(q, q::deadLetterFailures), "no third move was started");
            assertEquals(6L, producer.all(ConfirmFrame.class).stream().flatMap(c -> c.sequences().stream())
                    .mapToLong(r -> r.to() - r.from() + 1).sum(), "only the six publishes before are confirmed");
        }
    }
}
