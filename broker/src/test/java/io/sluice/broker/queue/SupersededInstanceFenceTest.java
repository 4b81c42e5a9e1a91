package io.sluice.broker.queue;

import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.PublishErrorFrame;
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
 * P2 (docs/broker-core.md): a named producer's publishes are accepted only from the connection its newest instance
 * registered on, "any other gets PRODUCER_FENCED, also once the table forgot the producer". An older instance whose
 * connection stayed open (a zombie: its application thread stalled while the client's network thread kept the
 * connection alive) was fenced only while the newest instance's connection was open or the table still knew the
 * producer: once the newest instance's connection closed and the table forgot the producer (evicted by
 * {@code queues.dedup-max-producers}, or expired), the zombie's publishes were stored.
 */
class SupersededInstanceFenceTest {
    private static final long NAMED = 0x5EED_0001L;
    private static final long UNNAMED = 0x5EED_0002L;
    private static final Duration WAIT = Duration.ofSeconds(30);

    @TempDir
    Path dir;

    private static long settled(FakeConnection c) {
        return c.all(ConfirmFrame.class).size() + c.all(PublishErrorFrame.class).size();
    }

    @Test
    void anOlderInstanceStaysFencedAfterTheNewestLeftAndTheTableForgotTheProducer() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("queues.dedup-max-producers", "1", "storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            FakeConnection zombie = new FakeConnection("zombie");
            FakeConnection newest = new FakeConnection("newest");
            FakeConnection other = new FakeConnection("other");

            assertEquals(1, q.producerState().register(zombie, NAMED, -1).get(10, TimeUnit.SECONDS).epoch());
            core.publish(q, zombie, NAMED, 1, new byte[]{1});
            zombie.await(ConfirmFrame.class, 1, WAIT);

            assertEquals(2, q.producerState().register(newest, NAMED, -1).get(10, TimeUnit.SECONDS).epoch());
            core.publish(q, newest, NAMED, 2, new byte[]{2});
            newest.await(ConfirmFrame.class, 1, WAIT);
            newest.close();
            q.producerState().connectionClosed(newest); // as its session does when the channel closes

            // Another producer: the table, capped at one producer, forgets the named one.
            core.publish(q, other, UNNAMED, 1, new byte[]{3});
            other.await(ConfirmFrame.class, 1, WAIT);
            assertEquals(1L, q.snapshot().get(10, TimeUnit.SECONDS).counters().producersEvicted());

            core.publish(q, zombie, NAMED, 2, new byte[]{4}); // the older instance, on its connection still open
            zombie.await(Object.class, list -> settled(zombie) >= 2, WAIT, "the zombie's second publish settled");
            List<PublishErrorFrame> errors = zombie.all(PublishErrorFrame.class);
            assertEquals(1, errors.size(), "the older instance's publish is refused, not confirmed: " + zombie.all(ConfirmFrame.class));
            assertEquals(ErrorCode.PRODUCER_FENCED, errors.get(0).errorCode());
            assertEquals(3L, (long) QueueCore.onLoop(q, q::messageCount), "the zombie's message is not stored");
        }
    }
}
