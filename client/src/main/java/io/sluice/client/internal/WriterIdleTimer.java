package io.sluice.client.internal;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.concurrent.ScheduledFuture;

import java.util.concurrent.TimeUnit;

/**
 * Fires {@link IdleStateEvent#WRITER_IDLE_STATE_EVENT} (then the non-first one while it stays idle) when
 * nothing was written to the connection for a heartbeat interval, so that the side that owns it (broker
 * or client) sends a HEARTBEAT. Netty's {@code IdleStateHandler} does the same but, to count only writes that completed,
 * turns every write's void promise into a real one with a listener; that cost two objects per frame,
 * plus a promise per buffer in the frame encoder once the promise was no longer void. A heartbeat needs
 * only to know that frames are going out, so this counts a write when it is made.
 *
 * <p>Confined to the channel's event loop: {@link #write} and the timer run there.
 */
public final class WriterIdleTimer extends ChannelDuplexHandler {
    private final long intervalNanos;
    private long lastWriteNanos;
    private boolean firstIdle = true;
    private ScheduledFuture<?> timer;

    public WriterIdleTimer(long intervalMillis) {
        if (intervalMillis <= 0) {
            throw new IllegalArgumentException("heartbeat interval must be positive: " + intervalMillis);
        }
        this.intervalNanos = TimeUnit.MILLISECONDS.toNanos(intervalMillis);
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        if (ctx.channel().isActive() && ctx.channel().isRegistered()) {
            start(ctx);
        }
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        start(ctx);
        super.channelActive(ctx);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        stop();
        super.channelInactive(ctx);
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        stop();
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        lastWriteNanos = ctx.executor().ticker().nanoTime();
        firstIdle = true;
        ctx.write(msg, promise);
    }

    private void start(ChannelHandlerContext ctx) {
        if (timer != null) {
            return;
        }
        lastWriteNanos = ctx.executor().ticker().nanoTime();
        timer = ctx.executor().schedule(() -> check(ctx), intervalNanos, TimeUnit.NANOSECONDS);
    }

    private void stop() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
    }

    private void check(ChannelHandlerContext ctx) {
        if (timer == null || !ctx.channel().isOpen()) {
            return;
        }
        long idleFor = ctx.executor().ticker().nanoTime() - lastWriteNanos;
        long next = intervalNanos - idleFor;
        if (next <= 0) {
            next = intervalNanos;
            IdleStateEvent event = firstIdle ? IdleStateEvent.FIRST_WRITER_IDLE_STATE_EVENT : IdleStateEvent.WRITER_IDLE_STATE_EVENT;
            firstIdle = false;
            ctx.fireUserEventTriggered(event);
        }
        timer = ctx.executor().schedule(() -> check(ctx), next, TimeUnit.NANOSECONDS);
    }
}
