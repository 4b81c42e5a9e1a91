package io.sluice.broker.queue;

import io.sluice.protocol.ConfirmFrame;
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
 * A consumer whose queue was deleted keeps its tag on the connection until it unsubscribes; its later ACK, NACK and
 * CREDIT frames change nothing. Found by a review: the delete settled the consumer's credit and deliveries but left
 * its deliveries in place, so a later ACK settled them again and a later CREDIT was granted and never given back: the
 * connection's outstanding credit (limits.max-unacked-per-connection) drifted either way.
 */
class DeletedQueueConsumerTest {
    private static final int TAG = 1;

    @TempDir
    Path dir;

    @Test
    void framesOfAConsumerWhoseQueueWasDeletedLeaveTheConnectionsCreditAlone() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            FakeConnection consumer = new FakeConnection("consumer");
            ConnectionCredit account = new ConnectionCredit(100, () -> { });
            core.publish(q, producer, 7, 1, new byte[] {1}, new byte[] {2}, new byte[] {3});
            producer.await(ConfirmFrame.class, 1, Duration.ofSeconds(30));
            Subscription sub = Subscription.open(q, consumer, TAG, 5, account);
            List<FakeConnection.Delivery> delivered = consumer.await(FakeConnection.Delivery.class, 3, Duration.ofSeconds(30));
            assertEquals(5, account.outstanding(), "2 credit left and 3 deliveries unsettled");

            assertTrue(core.queues.delete("q"));
            assertEquals(0, account.outstanding(), "the delete settles the consumer's credit and deliveries");

            sub.ack(QueueCore.ackRange(TAG, delivered.get(0).id(), delivered.get(2).id()));
            sub.nack(new io.sluice.protocol.NackFrame(TAG, io.sluice.protocol.NackAction.REQUEUE, 0,
                    List.of(io.sluice.protocol.IdRange.single(delivered.get(1).id()))));
            sub.credit(10);
            assertEquals(0L, (long) QueueCore.onLoop(q, account::outstanding), "settled twice, or granted for a queue that is gone");
        }
    }

    /**
     * A SUBSCRIBE whose queue is closed for its delete by the time the queue's executor runs it (the connection found
     * the queue, then another deleted it) opens nothing: no reader on the files being deleted, no credit taken from the
     * connection's bound, and the client is told UNKNOWN_QUEUE. Before, the consumer joined the closed queue, its
     * reader was never closed, and its credit was never given back.
     */
    @Test
    void aSubscribeThatRunsAfterItsQueueClosedOpensNothingAndSaysUnknownQueue() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            QueueCore.onLoop(q, () -> {
                q.close(); // as the delete does, before it deletes the files
                return null;
            });
            FakeConnection consumer = new FakeConnection("consumer");
            ConnectionCredit account = new ConnectionCredit(100, () -> { });
            Subscription.open(q, consumer, TAG, 5, account);
            io.sluice.protocol.ErrorFrame refused = consumer.await(io.sluice.protocol.ErrorFrame.class, 1, Duration.ofSeconds(30)).get(0);
            assertEquals(io.sluice.protocol.ErrorCode.UNKNOWN_QUEUE, refused.errorCode(), refused.message());
            assertTrue(refused.message().contains("consumer tag " + TAG) && refused.message().contains("deleted"), refused.message());
            assertEquals(0L, (long) QueueCore.onLoop(q, account::outstanding), "credit taken for a queue that is gone");
            assertEquals(0, (int) QueueCore.onLoop(q, q::consumerCount), "a consumer on a closed queue");
        }
    }

    /** A purge that runs after its queue closed for a delete removes nothing and fails with UNKNOWN_QUEUE, not an internal error. */
    @Test
    void aPurgeThatRunsAfterItsQueueWasDeletedFailsWithUnknownQueue() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            assertTrue(core.queues.delete("q"));
            io.netty.util.concurrent.Future<Long> purge = q.purge().await();
            assertTrue(purge.cause() != null, "purged a deleted queue: " + purge.getNow());
            assertEquals(io.sluice.protocol.ErrorCode.UNKNOWN_QUEUE, io.sluice.broker.error.ErrorCodes.of(purge.cause()),
                    purge.cause().toString());
        }
    }
}
