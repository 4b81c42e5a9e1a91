package io.sluice.broker.queue;

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.EventLoopGroup;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.MessageStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code queues.dedup-idle-expiry-ms} forgets a producer "not seen" for that long. A producer whose publishes the queue
 * stored and still holds unconfirmed is not idle, it is waiting for the broker: a slowed queue releases confirms only
 * as consumers acknowledge (C2), so with the consumers away for longer than the expiry (an hour by default) its whole
 * window waits. The table forgot it all the same, and the resend of those messages after a reconnect (the client's
 * own, or after a broker restart) was stored a second time.
 */
class UnconfirmedProducerExpiryTest {
    private static final long WAITING = 0x11L;
    private static final long OTHER = 0x22L;
    private static final long EXPIRY_MS = 1_000;
    private static final Duration WAIT = Duration.ofSeconds(30);

    @TempDir
    Path dir;

    private static void publish(BrokerQueue queue, FakeConnection from, long producerId, long sequence, byte[] payload) {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, queue.name());
        builder.add(producerId, sequence, List.of(), payload);
        queue.publish(from, builder.build());
    }

    private static boolean confirmed(FakeConnection c, long producerId, long sequence) {
        for (ConfirmFrame f : c.all(ConfirmFrame.class)) {
            for (IdRange r : f.sequences()) {
                if (f.producerId() == producerId && r.from() <= sequence && sequence <= r.to()) {
                    return true;
                }
            }
        }
        return false;
    }

    @Test
    void aProducerWhosePublishesWaitForTheirConfirmIsNotForgottenAsIdle() throws Exception {
        AtomicLong clock = new AtomicLong(1_000_000_000L);
        BrokerConfig config = new ConfigLoader().load(null, Map.of("storage.reserved-disk-bytes", Long.toString(64L << 20),
                "storage.durability", "never", "queues.dedup-idle-expiry-ms", Long.toString(EXPIRY_MS)));
        EventLoopGroup loop = new DefaultEventLoopGroup(1);
        MessageStore store = MessageStore.open(dir, config.storeConfig(), clock::get);
        QueueManager queues = new QueueManager(store, loop, config.queues, config.broker.publishWindowMessages,
                config.broker.publishWindowBytes, QueueManager.Role.SINGLE_BROKER);
        try {
            // Slowed from the first message: confirms wait for acks, and no consumer acks.
            BrokerQueue q = queues.declare("q", QueueSettings.builder().quotaMessages(1, 0).build());
            FakeConnection before = new FakeConnection("before the reconnect");
            publish(q, before, WAITING, 1, new byte[]{1});
            QueueCore.awaitOnLoop(q, q::messageCount, 1L);
            assertEquals(FlowState.SLOWED, QueueCore.onLoop(q, q::flowState));

            clock.addAndGet(2 * EXPIRY_MS); // the consumers stay away longer than the expiry
            FakeConnection other = new FakeConnection("other");
            publish(q, other, OTHER, 1, new byte[]{2}); // a new producer: the table expires the idle ones
            QueueCore.awaitOnLoop(q, q::messageCount, 2L);

            FakeConnection after = new FakeConnection("after the reconnect");
            publish(q, after, WAITING, 1, new byte[]{1}); // the client resends what it has unconfirmed
            // Read on the executor behind the resend: it has been handled.
            assertEquals(2L, (long) QueueCore.onLoop(q, q::messageCount), "the resend is not stored a second time");
            assertEquals(0L, q.snapshot().get(10, TimeUnit.SECONDS).counters().producersExpired());
            assertTrue(before.all(ConfirmFrame.class).isEmpty(), "the original still waits for its confirm");

            // The consumers come back: what is stored is delivered, once each, and every confirm goes out.
            FakeConnection consumer = new FakeConnection("consumer");
            Subscription sub = Subscription.open(q, consumer, 1, 10, QueueCore.unbounded());
            List<FakeConnection.Delivery> delivered = consumer.await(FakeConnection.Delivery.class, 2, WAIT);
            for (FakeConnection.Delivery d : delivered) {
                sub.ack(QueueCore.ack(1, d.id()));
            }
            after.await(ConfirmFrame.class, list -> confirmed(after, WAITING, 1), WAIT, "the resend confirmed");
            assertEquals(List.of(1, 2), delivered.stream().map(d -> (int) d.payload()[0]).toList());
            assertEquals(2L, q.snapshot().get(10, TimeUnit.SECONDS).counters().published(), "two messages stored");
            assertEquals(1L, q.snapshot().get(10, TimeUnit.SECONDS).counters().duplicates(), "the resend counted as a duplicate");
        } finally {
            queues.close();
            loop.shutdownGracefully(0, 5, TimeUnit.SECONDS).awaitUninterruptibly(15, TimeUnit.SECONDS);
            store.close();
        }
    }
}
