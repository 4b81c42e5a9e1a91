package io.sluice.broker.metrics;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.Frame;

/**
 * Counts what passes one point of a connection's pipeline into {@link NetworkCounters}: placed before
 * the codec it sees bytes, placed after it frames. A CLOSE the broker sends with an error code is a
 * protocol error of that code (the session adapter closes every failing connection that way).
 * Stateless, so one instance of each kind is
 * shared by every connection; the per-connection figures live in {@link ConnectionTraffic}.
 */
@ChannelHandler.Sharable
public final class TrafficCountHandler extends ChannelDuplexHandler {
    private final NetworkCounters counters;
    private final boolean bytes;

    private TrafficCountHandler(NetworkCounters counters, boolean bytes) {
        this.counters = counters;
        this.bytes = bytes;
    }

    /** Goes first in the pipeline, before the frame codec. */
    public static TrafficCountHandler bytes(NetworkCounters counters) {
        return new TrafficCountHandler(counters, true);
    }

    /** Goes after the frame codec, before the handshake handler and the session adapter. */
    public static TrafficCountHandler frames(NetworkCounters counters) {
        return new TrafficCountHandler(counters, false);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (bytes && msg instanceof ByteBuf buf) {
            int n = buf.readableBytes();
            counters.bytesReceived.add(n);
            ConnectionTraffic.of(ctx.channel()).bytesReceived += n;
        } else if (!bytes && msg instanceof Frame) {
            counters.framesReceived.increment();
            ConnectionTraffic.of(ctx.channel()).framesReceived++;
        }
        ctx.fireChannelRead(msg);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (bytes && msg instanceof ByteBuf buf) {
            int n = buf.readableBytes();
            counters.bytesSent.add(n);
            ConnectionTraffic.of(ctx.channel()).bytesSent += n;
        } else if (!bytes && msg instanceof Frame) {
            counters.framesSent.increment();
            ConnectionTraffic.of(ctx.channel()).framesSent++;
            if (msg instanceof CloseFrame close) {
                counters.closedWith(io.sluice.protocol.ErrorCode.fromCode(close.code()));
            }
        }
        ctx.write(msg, promise);
    }
}
