package io.sluice.broker.net;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.sluice.broker.TestAwait;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishCreditFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The connection's links as a queue on another thread uses them: its writes reach the connection's
 * loop in one task ending in one flush, and the publish window comes back on the loop as the
 * PUBLISH_CREDIT is written, the bytes its messages held (W2) as it is handed over. The test thread plays the queue's
 * executor.
 */
class ClientSessionProxyTest {
    private final FlushCounter flushes = new FlushCounter();
    private final ChannelInboundHandlerAdapter end = new ChannelInboundHandlerAdapter();
    private LocalConnection connection;
    private PublishWindow window;
    private HeldPublishBytes held;
    private InboundGate gate;
    private ClientSessionProxy proxy;

    @BeforeEach
    void open() throws Exception {
        connection = new LocalConnection(flushes, end);
        ChannelHandlerContext ctx = connection.broker.pipeline().context(end);
        window = new PublishWindow(2, 1 << 20, true);
        held = new HeldPublishBytes(1000);
        gate = new InboundGate(ctx, msg -> { }, e -> { });
        proxy = new ClientSessionProxy(ctx, "test-client", 1 << 20, window, held, gate);
    }

    @AfterEach
    void close() {
        connection.close();
    }

    @Test
    void shouldHandAQueuesWritesToTheLoopInOneTaskEndingInOneFlush() throws Exception {
        CountDownLatch loopHeld = new CountDownLatch(1);
        connection.loop.execute(() -> awaitUninterruptibly(loopHeld));
        int flushesBefore = flushes.count.get();
        for (long producer = 1; producer <= 3; producer++) {
            proxy.confirm(producer, List.of(IdRange.single(0)));
        }
        proxy.flush(); // off the loop: nothing, the drain flushes
        loopHeld.countDown();

        assertEquals(List.of(1L, 2L, 3L), connection.await(ConfirmFrame.class, 3).stream().map(ConfirmFrame::producerId).toList());
        assertEquals(1, flushes.count.get() - flushesBefore, "one flush for the three frames");
    }

    @Test
    void shouldGiveTheWindowBackOnTheLoopAsThePublishCreditIsWrittenAndResumeReading() throws Exception {
        connection.onLoop(() -> {
            window.take(3, 30);
            return gate.pauseForWindow();
        });
        assertFalse(connection.reading());

        proxy.publishCredit(3, 30, 0);
        connection.await(PublishCreditFrame.class, 1);
        assertEquals(0L, (long) connection.onLoop(window::messagesOut));
        assertEquals(0L, (long) connection.onLoop(window::bytesOut));
        TestAwait.until("reading resumed", connection::reading);
        assertTrue(connection.reading());
    }

    /**
     * A client that counts its window in payload bytes is within it, but its messages hold more headers and payload than
     * the bound (W2): reading resumes only once the credits bring that count back within it.
     */
    @Test
    void shouldResumeReadingOnlyOnceTheHeldBytesAreBackWithinTheirBound() throws Exception {
        connection.onLoop(() -> {
            window.take(2, 2); // two one-byte payloads
            held.take(1200 + 100); // one with 1199 bytes of headers, one with 99
            return gate.pauseForWindow();
        });
        assertFalse(connection.reading());

        proxy.publishCredit(1, 1, 100);
        connection.await(PublishCreditFrame.class, 1);
        assertEquals(1200L, held.bytes());
        assertTrue(connection.onLoop(window::within));
        assertFalse(connection.reading(), "still past the bound of 1000");

        proxy.publishCredit(1, 1, 1200);
        connection.await(PublishCreditFrame.class, 2);
        TestAwait.until("reading resumed", connection::reading);
        assertEquals(0L, held.bytes());
        assertEquals(0L, (long) connection.onLoop(window::bytesOut));
    }

    private static void awaitUninterruptibly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Counts the flushes that pass it on the way to the socket. */
    private static final class FlushCounter extends ChannelDuplexHandler {
        final AtomicInteger count = new AtomicInteger();

        @Override
        public void flush(ChannelHandlerContext ctx) {
            count.incrementAndGet();
            ctx.flush();
        }
    }
}
