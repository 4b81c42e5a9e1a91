package io.sluice.broker.queue;

import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.StorageFailedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A NACK with REJECT_TO_DEAD_LETTER over several ids reads each message to move it. A read that fails otherwise than on
 * a damaged record (the store failed) is a failed move for that message alone: it stays in the queue and is delivered
 * again after {@code max-redelivery-delay-ms}, counted as a dead-letter failure, and the frame's other messages are
 * moved. Found by a review: the failure left the frame's loop, and the messages after it were neither moved nor due again,
 * out of every consumer's hands, until a restart. The consumer is told, with one ERROR STORAGE_FAILED for the frame (found
 * by a later review: only the operator log said so, and the application took the message for dead-lettered).
 */
class NackRejectReadFailureTest {
    private static final int TAG = 4;
    @TempDir
    Path dir;

    @Test
    void aMessageThatCannotBeReadStaysAndTheOthersOfTheFrameAreMoved() throws Exception {
        try (QueueCore core = new QueueCore(dir, java.util.Map.of("storage.durability", "never",
                "queues.redelivery-delay-ms", "10", "queues.max-redelivery-delay-ms", "200"))) {
            BrokerQueue q = core.queues.declare("jobs", QueueSettings.EMPTY);
            core.publish(q, new FakeConnection("producer"), 1, 0, new byte[] {1}, new byte[] {2}, new byte[] {3}, new byte[] {4});
            FakeConnection consumer = new FakeConnection("consumer");
            ConnectionCredit account = new ConnectionCredit(100, () -> { });
            Subscription sub = Subscription.open(q, consumer, TAG, 4, account);
            List<Long> ids = consumer.await(FakeConnection.Delivery.class, 4, Duration.ofSeconds(30)).stream()
                    .map(FakeConnection.Delivery::id).toList();
            long unreadable = ids.get(1);
            QueueCore.onLoop(q, () -> {
                q.readsThrough(id -> {
                    if (id == unreadable) {
                        throw new StorageFailedException("a read of queue 'jobs' faulted (injected)", null);
                    }
                    return q.store().read(id);
                });
                return null;
            });

            sub.nack(new NackFrame(TAG, NackAction.REJECT_TO_DEAD_LETTER, 0, List.of(new IdRange(ids.get(0), ids.get(3)))));
            QueueCore.onLoop(q, () -> {
                q.readsThrough(q.store()::read); // the store reads again
                return null;
            });
            assertEquals(1L, (long) QueueCore.onLoop(q, q::deadLetterFailures), "the unreadable one is a failed move");
            List<ErrorFrame> errors = consumer.all(ErrorFrame.class);
            assertEquals(1, errors.size(), "one ERROR for the frame: " + errors);
            assertEquals(ErrorCode.STORAGE_FAILED, errors.get(0).errorCode());
            assertEquals("nack to the dead-letter queue of message " + unreadable + " on consumer " + TAG + " of queue 'jobs'"
                    + " was not applied: the queue's storage failed to read it (a read of queue 'jobs' faulted (injected));"
                    + " it stays in the queue and is delivered again in 200 ms", errors.get(0).message());
            assertEquals(0L, account.outstanding(), "every rejected delivery is settled");
            QueueCore.awaitOnLoop(q, q::deadLettered, 3L);
            BrokerQueue dead = core.queues.get("jobs.dlq");
            FakeConnection inspector = new FakeConnection("inspector");
            Subscription.open(dead, inspector, 1, 10, QueueCore.unbounded());
            Set<String> moved = inspector.await(FakeConnection.Delivery.class, 3, Duration.ofSeconds(30)).stream()
                    .map(d -> d.header(DeadLetterer.HEADER_ORIGINAL_ID)).collect(Collectors.toSet());
            assertEquals(Set.of(Long.toString(ids.get(0)), Long.toString(ids.get(2)), Long.toString(ids.get(3))), moved);

            sub.credit(1);
            FakeConnection.Delivery again = consumer.await(FakeConnection.Delivery.class, 5, Duration.ofSeconds(30)).get(4);
            assertEquals(unreadable, again.id(), "the one that could not be read is delivered again after the retry's delay");
            assertEquals(2, again.deliveryCount());
            sub.ack(QueueCore.ack(TAG, unreadable));
            QueueCore.awaitOnLoop(q, q.store()::unackedMessages, 0L);
            assertEquals(0L, (long) QueueCore.onLoop(q, q::backlogBytes));
            assertEquals(3L, (long) QueueCore.onLoop(dead, dead.store()::unackedMessages));
            assertEquals(0L, account.outstanding());
        }
    }
}
