package io.sluice.broker.net;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.sluice.broker.TestAwait;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.HeartbeatFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Rules H1 and H2 of {@link InboundGate}, on a real connection loop with no socket. */
class InboundGateTest {
    private final ChannelInboundHandlerAdapter end = new ChannelInboundHandlerAdapter();
    private final List<Object> handled = new ArrayList<>();
    private final List<String> answers = new ArrayList<>();
    private LocalConnection connection;
    private InboundGate gate;

    @BeforeEach
    void open() throws Exception {
        connection = new LocalConnection(end);
        ChannelHandlerContext ctx = connection.broker.pipeline().context(end);
        gate = new InboundGate(ctx, handled::add, e -> { throw new AssertionError(e); });
    }

    @AfterEach
    void close() {
        connection.close();
    }

    @Test
    void shouldHoldTheFramesBehindADeleteAndHandThemOnInOrderOnceItIsAnswered() throws Exception {
        CompletableFuture<Boolean> delete = new CompletableFuture<>();
        Frame declare = declare(false);
        connection.onLoop(() -> {
            gate.afterOffLoop(delete, false, (deleted, error) -> answers.add("delete " + deleted));
            assertTrue(gate.hold(HeartbeatFrame.INSTANCE));
            assertTrue(gate.hold(declare), "a declare waits behind a delete");
            return null;
        });
        assertFalse(connection.reading(), "reading stops while the delete runs");
        assertEquals(List.of(), connection.onLoop(() -> List.copyOf(handled)));

        delete.complete(true);
        TestAwait.until("the held frames handled", () -> connection.onLoop(handled::size) == 2);
        assertEquals(List.of("delete true"), connection.onLoop(() -> List.copyOf(answers)));
        assertEquals(List.of(HeartbeatFrame.INSTANCE, declare), connection.onLoop(() -> List.copyOf(handled)));
        assertTrue(connection.reading());
    }

    @Test
    void shouldLetADeclarePassDeclaresInFlightButNothingElse() throws Exception {
        CompletableFuture<Object> first = new CompletableFuture<>();
        connection.onLoop(() -> {
            gate.afterOffLoop(first, true, (queue, error) -> { });
            assertFalse(gate.hold(declare(false)), "declares do not wait for declares");
            assertTrue(gate.hold(declare(true)), "a passive declare waits");
            assertTrue(gate.hold(declare(false)), "and so does every declare after it");
            return null;
        });
        first.complete(null);
        TestAwait.until("the held frames handled", () -> connection.onLoop(handled::size) == 2);
    }

    @Test
    void shouldResumeReadingOnlyWhenNeitherARequestNorTheWindowHoldsIt() throws Exception {
        CompletableFuture<Boolean> delete = new CompletableFuture<>();
        connection.onLoop(() -> {
            gate.afterOffLoop(delete, false, (deleted, error) -> { });
            assertTrue(gate.pauseForWindow());
            assertFalse(gate.pauseForWindow(), "paused once");
            gate.windowWithin();
            return null;
        });
        assertFalse(connection.reading(), "the delete still holds reading");

        connection.onLoop(gate::pauseForWindow);
        delete.complete(true);
        connection.onLoop(() -> null); // the answer's task has run
        assertFalse(connection.reading(), "the window still holds reading");
        connection.onLoop(() -> {
            gate.windowWithin();
            return null;
        });
        assertTrue(connection.reading());
    }

    private static DeclareQueueFrame declare(boolean passive) {
        return new DeclareQueueFrame(1, "q", QueueSettings.builder().build(), passive);
    }
}
