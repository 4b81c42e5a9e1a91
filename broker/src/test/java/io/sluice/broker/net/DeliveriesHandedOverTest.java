package io.sluice.broker.net;

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.sluice.broker.TestAwait;
import io.sluice.protocol.DeliverFrameBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A consumer's connection is unwritable to its queue once the DELIVER frames the queue handed over pass the high water
 * mark, written to the channel or not yet. Found by a review: a queue on another event loop than its consumer's
 * connection checks writability for each message, but what it hands over reaches the channel's buffer only when the
 * connection's loop drains it, so the connection stayed writable for the whole dispatch, which could so build the
 * consumer's entire credit of messages (credit times message size: a gigabyte for 10,000 of 100 KB), not about the mark
 * (docs/flow-control.md, "Consumers: credit and writability"). The test thread plays the queue's executor.
 */
class DeliveriesHandedOverTest {
    private static final int PAYLOAD_BYTES = 16 << 10;
    private final ChannelInboundHandlerAdapter end = new ChannelInboundHandlerAdapter();
    private LocalConnection connection;
    private ClientSessionProxy proxy;
    private int highWaterMark;
    private final AtomicInteger wakes = new AtomicInteger();

    @BeforeEach
    void open() throws Exception {
        connection = new LocalConnection(end);
        ChannelHandlerContext ctx = connection.broker.pipeline().context(end);
        PublishWindow window = new PublishWindow(10, 1 << 20, true);
        proxy = new ClientSessionProxy(ctx, "test-client", 1 << 20, window, new HeldPublishBytes(1 << 20),
                new InboundGate(ctx, msg -> { }, e -> { }));
        highWaterMark = connection.broker.config().getWriteBufferHighWaterMark();
        connection.onLoop(() -> {
            proxy.wakeQueues(wakes::incrementAndGet);
            return null;
        });
    }

    @AfterEach
    void close() {
        connection.close();
    }

    @Test
    void deliveriesHandedOverCountAgainstTheHighWaterMarkBeforeTheLoopWritesThem() throws Exception {
        CountDownLatch loopHeld = new CountDownLatch(1);
        connection.loop.execute(() -> {
            try {
                loopHeld.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        long handedOver = 0;
        try {
            int frames = 0;
            while (proxy.isWritable() && frames < 200) { // as a dispatch: one more while the connection takes more
                DeliverFrameBuilder frame = new DeliverFrameBuilder(ByteBufAllocator.DEFAULT, 1).add(frames, 1, List.of(),
                        new byte[PAYLOAD_BYTES]);
                handedOver += frame.encodedBytes();
                proxy.deliver(frame.build());
                frames++;
            }
        } finally {
            loopHeld.countDown();
        }
        assertTrue(handedOver <= highWaterMark + PAYLOAD_BYTES + 64, handedOver + " bytes handed over past a high water mark of "
                + highWaterMark + " while the loop wrote none of them");

        TestAwait.until("the connection writable again once the client read what was handed over",
                () -> connection.onLoop(proxy::isWritable));
        // Its queues are woken to deliver again, whether or not the channel's buffer went past the mark meanwhile.
        TestAwait.until("the queues woken", () -> wakes.get() > 0);
    }
}
