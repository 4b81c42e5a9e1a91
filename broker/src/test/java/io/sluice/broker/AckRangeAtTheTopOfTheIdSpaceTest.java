package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.CreditFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.UnsubscribeFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An ACK naming ids at the top of the id space (a range ending at Long.MAX_VALUE, or one so wide that
 * {@code to - from} overflows) while the queue has messages due again (taken back from a consumer that left):
 * the ready list's range walk ({@code for (id = from; id <= to; id++)}) never ended, as no long is above
 * Long.MAX_VALUE, and the queue's event loop (which serves other queues and connections too) spun for good.
 * The ACK must get its UNKNOWN_MESSAGE_ID and the message must still be delivered.
 */
@Timeout(60)
class AckRangeAtTheTopOfTheIdSpaceTest {
    @TempDir
    Path dir;

    @Test
    void anAckOfARangeEndingAtLongMaxIsAnsweredAndTheQueueGoesOn() throws Exception {
        assertAnsweredAndDelivered(new IdRange(Long.MAX_VALUE, Long.MAX_VALUE));
    }

    @Test
    void anAckOfARangeWhoseWidthOverflowsIsAnsweredAndTheQueueGoesOn() throws Exception {
        assertAnsweredAndDelivered(new IdRange(Long.MIN_VALUE, 0));
    }

    private void assertAnsweredAndDelivered(IdRange bogus) throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of())) {
            broker.queues().declare("q", QueueSettings.EMPTY);
            try (Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                    .reconnectPolicy(ReconnectPolicy.DISABLED).build())) {
                c.createProducer("q", ProducerOptions.DEFAULT).send(Payloads.of(1));
            }
            try (RawClient raw = RawClient.connected(broker.port())) {
                raw.send(new SubscribeFrame(1, 1, "q", 1));
                raw.expect(OkFrame.class);
                RawClient.Delivery first = raw.deliveries(1).get(0);
                raw.send(new UnsubscribeFrame(2, 1)); // the message goes back to the queue's ready list
                raw.expect(OkFrame.class);
                raw.send(new SubscribeFrame(3, 2, "q", 0)); // no credit: it stays there
                raw.expect(OkFrame.class);

                raw.send(new AckFrame(2, List.of(bogus)));
                ErrorFrame error = raw.expect(ErrorFrame.class);
                assertEquals(ErrorCode.UNKNOWN_MESSAGE_ID, error.errorCode(), error.message());
                assertTrue(error.message().contains("message ids " + bogus.from() + ".." + bogus.to()), error.message());

                raw.send(new CreditFrame(2, 1));
                RawClient.Delivery again = raw.deliveries(1).get(0);
                assertEquals(first.id(), again.id());
                assertEquals(2, again.deliveryCount());
                assertArrayEquals(first.payload(), again.payload());
            }
            // Another client on the broker is served.
            broker.queues().declare("other", QueueSettings.EMPTY);
            try (Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                    .reconnectPolicy(ReconnectPolicy.DISABLED).build())) {
                c.createProducer("other", ProducerOptions.DEFAULT).send(Payloads.of(2));
            }
        }
    }
}
