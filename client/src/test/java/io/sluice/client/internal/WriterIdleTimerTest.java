package io.sluice.client.internal;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.timeout.IdleStateEvent;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

class WriterIdleTimerTest {
    private final List<IdleStateEvent> events = new ArrayList<>();
    private final List<ChannelPromise> promisesSeen = new ArrayList<>();

    private EmbeddedChannel channel() {
        EmbeddedChannel channel = new EmbeddedChannel();
        channel.freezeTime();
        channel.pipeline().addLast(new ChannelOutboundHandlerAdapter() {
            @Override
            public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                promisesSeen.add(promise);
                ctx.write(msg, promise);
            }
        });
        channel.pipeline().addLast(new WriterIdleTimer(1000));
        channel.pipeline().addLast(new ChannelInboundHandlerAdapter() {
            @Override
            public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                events.add((IdleStateEvent) evt);
            }
        });
        return channel;
    }

    @Test
    void shouldFireWriterIdleOncePerIntervalWithoutWrites() {
        EmbeddedChannel channel = channel();
        channel.advanceTimeBy(999, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        assertEquals(List.of(), events);
        channel.advanceTimeBy(1, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        assertEquals(List.of(IdleStateEvent.FIRST_WRITER_IDLE_STATE_EVENT), events);
        channel.advanceTimeBy(1000, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        assertEquals(List.of(IdleStateEvent.FIRST_WRITER_IDLE_STATE_EVENT, IdleStateEvent.WRITER_IDLE_STATE_EVENT), events);
        channel.finishAndReleaseAll();
    }

    @Test
    void shouldPutTheIdleTimeOffByAWriteAndLeaveItsVoidPromiseVoid() {
        EmbeddedChannel channel = channel();
        channel.advanceTimeBy(600, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        ChannelPromise voidPromise = channel.voidPromise();
        channel.pipeline().writeAndFlush("frame", voidPromise);
        channel.advanceTimeBy(600, TimeUnit.MILLISECONDS); // 1,200 ms since start, 600 since the write
        channel.runScheduledPendingTasks();
        assertEquals(List.of(), events, "a write 600 ms ago: not idle yet");
        channel.advanceTimeBy(400, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        assertEquals(List.of(IdleStateEvent.FIRST_WRITER_IDLE_STATE_EVENT), events);
        assertEquals(1, promisesSeen.size());
        assertSame(voidPromise, promisesSeen.get(0), "the write's void promise must reach the encoder as it was");
        assertTrue(promisesSeen.get(0).isVoid());
        channel.finishAndReleaseAll();
    }

    @Test
    void shouldStopFiringOnceTheChannelCloses() {
        EmbeddedChannel channel = channel();
        channel.close();
        channel.advanceTimeBy(5000, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
        assertEquals(List.of(), events);
    }
}
