package io.sluice.broker.net;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.DuplexChannel;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.ReferenceCountUtil;
import io.sluice.protocol.Frame;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Closing a client's connection after a last frame (CLOSE, with the reason). Every close of a client's connection with
 * a frame goes through here. Two rules:
 * <ul>
 *   <li>L1 the close comes at the latest {@link #GRACE_MS} after the frame was sent, whatever the write. A client that
 *       does not read never lets the write complete (the frame waits behind what the broker wrote before it), and a
 *       close that waited for it left the connection open for good, with its slot under {@code limits.max-connections},
 *       its outbound buffer and its deliveries ({@code ClientThatNeverReadsIsClosedTest}).</li>
 *   <li>L2 the close does not reset the connection under the frame. A socket closed with input it has not read makes the
 *       kernel send a reset (RST) instead of FIN, and a reset drops what still waits in the broker's send queue, the
 *       last frame and the ERROR before it included, and fails the client's next read ("Connection reset by peer"):
 *       a stopping broker (which reads none of its clients, rule H3 of {@link InboundGate}) lost the NOT_CONFIRMED_SHUTDOWN
 *       it had just written to a client that had sent more meanwhile. So once the frame is sent, whatever the client
 *       sends is read and released undecoded (nothing it sends after its last frame is handled); once the frame is
 *       written the broker half-closes the connection (FIN after the frame, after a TLS close_notify); and the
 *       connection closes when the client closes its side (the end of its input), or by L1.</li>
 * </ul>
 * A channel that cannot half-close (not a socket: the tests' local channels) closes once the frame is written, by L1
 * at the latest.
 *
 * <p>Threads: {@link #writeAndClose(Channel, Frame)} from any thread, the rest on the channel's event loop.
 */
public final class LastFrame {
    /** How long a connection's last frame may take to reach a client before the broker closes it anyway. */
    public static final long GRACE_MS = 2_000;
    /** The name of {@link DiscardInput} in a pipeline. */
    private static final String DISCARD = "sluice-discard-after-last-frame";

    private LastFrame() {
    }

    /** Writes {@code frame} to {@code channel} and closes it (L1, L2); on the channel's loop, behind what was written before. */
    public static void writeAndClose(Channel channel, Frame frame) {
        try {
            channel.eventLoop().execute(() -> send(channel, channel.writeAndFlush(frame)));
        } catch (RejectedExecutionException stopped) {
            channel.close(); // the loop is stopping, and closes its channels itself
        }
    }

    /** As {@link #writeAndClose(Channel, Frame)}, the frame written from {@code ctx}'s place in the pipeline; on the loop. */
    static void writeAndClose(ChannelHandlerContext ctx, Frame frame) {
        send(ctx.channel(), ctx.writeAndFlush(frame));
    }

    /** True once a last frame was sent on {@code channel}: nothing it reads is handled any more. On the loop. */
    static boolean sent(Channel channel) {
        return channel.pipeline().get(DISCARD) != null;
    }

    private static void send(Channel channel, ChannelFuture written) {
        if (channel.isActive() && !sent(channel)) {
            channel.pipeline().addFirst(DISCARD, DiscardInput.INSTANCE);
            channel.config().setAutoRead(true); // whatever paused reading (H1 to H4), the client's input is drained now
            channel.read();
        }
        written.addListener(HALF_CLOSE);
        channel.eventLoop().schedule(() -> channel.close(), GRACE_MS, TimeUnit.MILLISECONDS);
    }

    /** Once the last frame is written: FIN after it (L2), or the close where the channel cannot half-close. */
    private static final ChannelFutureListener HALF_CLOSE = written -> {
        Channel channel = written.channel();
        if (!written.isSuccess() || !(channel instanceof DuplexChannel duplex) || !channel.isActive()) {
            channel.close();
            return;
        }
        SslHandler tls = channel.pipeline().get(SslHandler.class);
        if (tls == null) {
            duplex.shutdownOutput();
        } else {
            // As a close would: close_notify first, so that a TLS client sees the end of the stream as one.
            tls.closeOutbound().addListener(notified -> duplex.shutdownOutput());
        }
    };

    /**
     * First in the pipeline of a connection whose last frame is sent (L2): releases every buffer read, undecoded, and keeps
     * reading. Nothing after it hears of the input: not the bytes, not the writability that pauses reading (H4), not the
     * stop of reading at shutdown (H3). The close, the end of the input and failures go on as before.
     */
    @ChannelHandler.Sharable
    private static final class DiscardInput extends ChannelInboundHandlerAdapter {
        static final DiscardInput INSTANCE = new DiscardInput();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ReferenceCountUtil.release(msg);
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (!ctx.channel().config().isAutoRead()) {
                ctx.read();
            }
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt != StopReading.INSTANCE) {
                ctx.fireUserEventTriggered(evt);
            }
        }
    }
}
