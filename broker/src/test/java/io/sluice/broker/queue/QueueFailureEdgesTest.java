package io.sluice.broker.queue;

import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Issue 15, defect 7: a publish behind a delete, and a redelivery that cannot be read. */
class QueueFailureEdgesTest {
    @TempDir
    Path dir;

    @Test
    void aPublishHandedToAQueueAfterItsDeleteWasAnsweredIsRefusedNotConfirmed() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("doomed", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            assertTrue(core.queues.delete("doomed"));
            // As a connection that looked the queue up just before the delete and hands it the frame just after.
            core.publish(q, producer, 5, 0, "late".getBytes(StandardCharsets.UTF_8));
            List<PublishErrorFrame> refused = producer.await(PublishErrorFrame.class, 1, Duration.ofSeconds(30));
            assertEquals(ErrorCode.UNKNOWN_QUEUE, refused.get(0).errorCode());
            assertTrue(refused.get(0).message().contains("'doomed'"), refused.get(0).message());
            QueueCore.onLoop(q, () -> null);
            assertEquals(List.of(), producer.all(ConfirmFrame.class));
            assertEquals(1, producer.publishCreditReturned(), "the refused message's publish window is given back");
        }
    }

    @Test
    void aRedeliveryThatFailsItsChecksumIsDiscardedAndTheNextOneStillGoesOut() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("damaged", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            FakeConnection first = new FakeConnection("first");
            core.publish(q, producer, 5, 0, marker("AAAAAAAA"), marker("BBBBBBBB"));
            Subscription sub = Subscription.open(q, first, 1, 2, QueueCore.unbounded());
            List<FakeConnection.Delivery> delivered = first.await(FakeConnection.Delivery.class, 2, Duration.ofSeconds(30));
            sub.close(); // both go back to the front of the queue
            QueueCore.onLoop(q, () -> null);
            long damaged = delivered.get(0).id();
            DamagedRecords.flipAByteOf(q.store().segmentDirectory(), damaged, "AAAAAAAA");

            FakeConnection second = new FakeConnection("second");
            Subscription.open(q, second, 2, 2, QueueCore.unbounded());
            List<FakeConnection.Delivery> again = second.await(FakeConnection.Delivery.class, 1, Duration.ofSeconds(30));
            assertEquals(delivered.get(1).id(), again.get(0).id(), "the undamaged message is redelivered");
            assertEquals("BBBBBBBB", new String(again.get(0).payload(), StandardCharsets.UTF_8));
            assertEquals(1L, (long) QueueCore.onLoop(q, q.store()::unackedMessages), "the damaged record is discarded, as readers do");
            assertEquals(1L, (long) QueueCore.onLoop(q, q.store()::corruptRecords));
            assertEquals(1, second.deliveries().size());
        }
    }

    private static byte[] marker(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
