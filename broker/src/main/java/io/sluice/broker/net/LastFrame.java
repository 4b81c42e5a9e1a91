package io.sluice.broker.net;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.sluice.protocol.Frame;

import java.util.concurrent.TimeUnit;

/**
 * Closing a client's connection after a last frame (CLOSE, with the reason): once that frame is written, or after
 * {@link #GRACE_MS} whatever the write. A client that does not read never lets the write complete (the frame waits
 * behind what the broker wrote before it), and a close that waited for it left the connection open for good, with
 * its slot under {@code limits.max-connections}, its outbound buffer and its deliveries
 * ({@code ClientThatNeverReadsIsClosedTest}). Every close of a client's connection with a frame goes through here.
 *
 * <p>Threads: any.
 */
public final class LastFrame {
    /** How long a connection's last frame may take to reach a client before the broker closes it anyway. */
    public static final long GRACE_MS = 2_000;

    private LastFrame() {
    }

    /** Writes {@code frame} to {@code channel} and closes it once written, or after {@link #GRACE_MS}. */
    public static void writeAndClose(Channel channel, Frame frame) {
        channel.writeAndFlush(frame).addListener(ChannelFutureListener.CLOSE);
        closeAfterGrace(channel);
    }

    /** As {@link #writeAndClose(Channel, Frame)}, the frame written from {@code ctx}'s place in the pipeline. */
    static void writeAndClose(ChannelHandlerContext ctx, Frame frame) {
        ctx.writeAndFlush(frame).addListener(ChannelFutureListener.CLOSE);
        closeAfterGrace(ctx.channel());
    }

    private static void closeAfterGrace(Channel channel) {
        channel.eventLoop().schedule(() -> channel.close(), GRACE_MS, TimeUnit.MILLISECONDS);
    }
}
