package io.sluice.broker;

import io.sluice.protocol.CreditFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.UnsubscribeFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/protocol.md, UNSUBSCRIBE: its OK comes after the last DELIVER for the tag. Found by a review: the OK was written
 * at once on the connection's loop while the queue's executor, which ends the consumer, could still be writing
 * deliveries for it; they came after the OK.
 */
@Timeout(120)
class UnsubscribeOrderTest {
    private static final int MESSAGES = 20_000;
    private static final int ROUNDS = 20;

    @TempDir
    Path dir;

    @Test
    void noDeliveryForATagComesAfterTheOkToItsUnsubscribe() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of("storage.durability", "never"));
             RawClient c = RawClient.connected(broker.port())) {
            c.send(new DeclareQueueFrame(1, "q", QueueSettings.EMPTY));
            c.expect(OkFrame.class);
            for (int batch = 0; batch < MESSAGES / 500; batch++) {
                PublishFrameBuilder frame = new PublishFrameBuilder(c.alloc(), "q");
                for (int i = 0; i < 500; i++) {
                    frame.add(0, 0, List.of(), new byte[16]);
                }
                c.send(frame.build());
            }
            TestAwait.until("the backlog is stored", () -> broker.store().queue("q").unackedMessages() == MESSAGES);
            long request = 10;
            for (int round = 0; round < ROUNDS; round++) {
                int tag = round + 1;
                long unsubscribe = ++request;
                long barrier = ++request;
                c.send(new SubscribeFrame(++request, tag, "q", 100));
                // Keep the consumer's deliveries flowing (credit given back as they come), then unsubscribe while the
                // queue is dispatching to it.
                int seen = 0;
                while (seen < 1_000) {
                    Object o = c.received.poll(30, TimeUnit.SECONDS);
                    assertTrue(o != null, "round " + round + ": deliveries stopped");
                    if (o instanceof RawClient.Delivery d && d.consumerTag() == tag && ++seen % 50 == 0) {
                        c.send(new CreditFrame(tag, 50));
                    }
                }
                c.send(new CreditFrame(tag, 50));
                c.send(new UnsubscribeFrame(unsubscribe, tag));
                c.send(new DeclareQueueFrame(barrier, "q", QueueSettings.EMPTY)); // answered after everything before
                boolean unsubscribed = false;
                int lateDeliveries = 0;
                while (true) {
                    Object o = c.received.poll(30, TimeUnit.SECONDS);
                    assertTrue(o != null, "round " + round + ": no answer to the barrier");
                    if (o instanceof OkFrame ok && ok.requestId() == unsubscribe) {
                        unsubscribed = true;
                    } else if (o instanceof OkFrame ok && ok.requestId() == barrier) {
                        break;
                    } else if (unsubscribed && o instanceof RawClient.Delivery d && d.consumerTag() == tag) {
                        lateDeliveries++;
                    }
                }
                assertTrue(unsubscribed, "round " + round + ": the unsubscribe was answered");
                assertEquals(0, lateDeliveries, "round " + round + ": deliveries for tag " + tag + " after the OK to its UNSUBSCRIBE");
            }
        }
    }
}
