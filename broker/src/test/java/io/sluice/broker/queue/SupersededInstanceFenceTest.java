package io.sluice.broker.queue;

import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

    /**
     * The fences kept for superseded instances are bounded, at twice {@code queues.dedup-max-producers} a queue, and a
     * new instance is never refused for them: a client registering the same names again from connection after
     * connection (each left open) made a fence per connection and name, without bound (a reverted attempt refused the
     * new instance at the bound instead, which a legitimate restart then met). Past the bound the queue drops the fences
     * of the connection fenced longest, and closes it with ERROR and CLOSE PRODUCER_FENCED; until it is closed, none of
     * its publishes is stored, also once the newest instance left and the table forgot the producer.
     */
    @Test
    void fencesStayWithinTheirBoundAndAConnectionWhoseFencesAreDroppedIsToldClosedAndNotStored() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("queues.dedup-max-producers", "2", "storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.EMPTY);
            long[] names = {0x5EED_0101L, 0x5EED_0102L, 0x5EED_0103L};
            int bound = 4; // twice queues.dedup-max-producers
            List<FakeConnection> instances = new ArrayList<>();
            int epoch = 0;
            for (int i = 0; i < 8; i++) {
                FakeConnection c = new FakeConnection("instance-" + i);
                instances.add(c);
                for (long name : names) {
                    assertEquals(++epoch, q.producerState().register(c, name, -1).get(10, TimeUnit.SECONDS).epoch(),
                            "a new instance is never refused for the fences of older ones");
                }
            }
            int kept = QueueCore.onLoop(q, () -> q.producerState().fencesKept());
            assertTrue(kept <= bound, "fences kept: " + kept + ", at most " + bound);
            assertEquals(names.length, kept, "the newest superseded instance keeps its fences");

            for (int i = 0; i < 6; i++) { // fenced longest: their fences dropped, and they are told and closed
                FakeConnection c = instances.get(i);
                List<CloseFrame> closes = c.all(CloseFrame.class);
                assertEquals(1, closes.size(), c.describe() + " is closed: " + c.all(Object.class));
                assertEquals(ErrorCode.PRODUCER_FENCED, closes.get(0).errorCode());
                List<ErrorFrame> errors = c.all(ErrorFrame.class);
                assertEquals(1, errors.size());
                String sentence = errors.get(0).message();
                assertEquals(ErrorCode.PRODUCER_FENCED.code(), errors.get(0).code());
                assertTrue(sentence.contains("queue 'q'") && sentence.contains("queues.dedup-max-producers")
                        && java.util.Arrays.stream(names).anyMatch(n -> sentence.contains(Long.toHexString(n))), sentence);
            }
            for (int i = 6; i < 8; i++) {
                assertEquals(List.of(), instances.get(i).all(CloseFrame.class), "instance " + i + " stays connected");
            }

            // The newest instance leaves and the table (of two) forgets the named producers.
            FakeConnection newest = instances.get(7);
            newest.close();
            q.producerState().connectionClosed(newest);
            FakeConnection other = new FakeConnection("other");
            core.publish(q, other, UNNAMED, 1, new byte[]{1});
            core.publish(q, other, UNNAMED + 1, 1, new byte[]{2});
            core.publish(q, other, UNNAMED + 2, 1, new byte[]{3});
            other.await(ConfirmFrame.class, 3, WAIT);

            // The oldest instance's connection, told to close but not closed yet, and the newest superseded one.
            FakeConnection oldest = instances.get(0);
            FakeConnection superseded = instances.get(6);
            core.publish(q, oldest, names[0], 1, new byte[]{4});
            core.publish(q, superseded, names[1], 1, new byte[]{5});
            oldest.await(PublishErrorFrame.class, 1, WAIT);
            superseded.await(PublishErrorFrame.class, 1, WAIT);
            assertEquals(ErrorCode.PRODUCER_FENCED, oldest.all(PublishErrorFrame.class).get(0).errorCode());
            assertEquals(ErrorCode.PRODUCER_FENCED, superseded.all(PublishErrorFrame.class).get(0).errorCode());
            assertEquals(List.of(), oldest.all(ConfirmFrame.class));
            assertEquals(3L, (long) QueueCore.onLoop(q, q::messageCount), "neither superseded instance's message is stored");

            for (FakeConnection c : instances.subList(0, 7)) {
                c.close();
                q.producerState().connectionClosed(c);
            }
            assertEquals(0, (int) QueueCore.onLoop(q, () -> q.producerState().fencesKept()));
        }
    }
}
