package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.HelloOkFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
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
 * HELLO's maxFrameBytes is a wish (ConnectionOptions.maxFrameBytes in the Java client): the broker granted any value
 * from 1024 up, also one below storage.max-message-bytes. A stored message larger than the grant then made a DELIVER
 * frame the broker's encoder refused: the consumer's connection was closed with FRAME_TOO_LARGE (a code that blames the
 * client's own frames, counted as an oversized frame it sent), the message went back with one more delivery count,
 * and after maxDeliveries such attempts it went to the dead-letter queue without ever reaching a consumer. The broker
 * must grant at least what its largest message needs, and deliver it.
 */
@Timeout(60)
class SmallFrameSizeConsumerTest {
    @TempDir
    Path dir;

    @Test
    void aConsumerThatAsksForFramesSmallerThanAStoredMessageStillGetsIt() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of("storage.max-message-bytes", "65536"))) {
            broker.queues().declare("q", QueueSettings.EMPTY);
            byte[] payload = new byte[32 << 10];
            payload[0] = 42;
            try (Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                    .reconnectPolicy(ReconnectPolicy.DISABLED).build())) {
                c.createProducer("q", ProducerOptions.DEFAULT).send(payload);
            }
            try (RawClient raw = new RawClient(broker.port())) {
                raw.send(new HelloFrame(1, 1, "small-frames", 4096, 0, "", ""));
                HelloOkFrame ok = raw.expect(HelloOkFrame.class);
                raw.send(new SubscribeFrame(1, 1, "q", 1));
                raw.expect(OkFrame.class);
                Object first = raw.received.poll(10, java.util.concurrent.TimeUnit.SECONDS);
                if (!(first instanceof RawClient.Delivery d)) {
                    throw new AssertionError("expected the delivery, got " + first + ", then " + raw.received);
                }
                assertArrayEquals(payload, d.payload());
                assertEquals(1, d.deliveryCount());
                raw.send(new AckFrame(1, List.of(IdRange.single(d.id()))));
                assertTrue(raw.isOpen(), "the consumer's connection is still open");
                assertTrue(ok.maxFrameBytes() >= 65536 + 1024,
                        "the grant holds a message of storage.max-message-bytes: " + ok.maxFrameBytes());
            }
            assertEquals(0, broker.limits().oversizedFrames(), "no client sent an oversized frame");
        }
    }
}
