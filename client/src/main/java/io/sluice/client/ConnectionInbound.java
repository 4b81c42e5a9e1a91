package io.sluice.client;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.timeout.IdleState;
import io.netty.handler.timeout.IdleStateEvent;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.Frame;
import io.sluice.protocol.FrameDecoder;
import io.sluice.protocol.FrameEncoder;
import io.sluice.protocol.HeartbeatFrame;
import io.sluice.protocol.HelloOkFrame;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.CompletableFuture;

/**
 * The last pipeline stage of one network connection of a {@link Connection}: the handshake's answer,
 * the heartbeats, and every later frame handed to the connection. Runs on the network thread.
 */
final class ConnectionInbound extends SimpleChannelInboundHandler<Frame> {
    private static final Logger LOG = LoggerFactory.getLogger(Connection.class);

    private final Connection connection;
    private final CompletableFuture<Void> handshake;
    private final FrameDecoder decoder;
    private final FrameEncoder encoder;

    ConnectionInbound(Connection connection, CompletableFuture<Void> handshake, FrameDecoder decoder, FrameEncoder encoder) {
        super(Frame.class);
        this.connection = connection;
        this.handshake = handshake;
        this.decoder = decoder;
        this.encoder = encoder;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext context, Frame frame) {
        Channel ch = context.channel();
        if (frame instanceof HelloOkFrame hello) {
            connection.onHelloOk(ch, hello, decoder, encoder, handshake);
        } else if (!handshake.isDone() && frame instanceof CloseFrame close) {
            ErrorCode code = close.errorCode();
            handshake.completeExceptionally(new SluiceException(code, close.reason(),
                    "the broker at " + connection.address() + " refused the handshake: " + code + ": " + close.reason()));
            ch.close();
        } else {
            connection.onFrame(ch, frame);
        }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext context, Object event) {
        if (event instanceof IdleStateEvent idle) {
            if (idle.state() == IdleState.WRITER_IDLE) {
                context.writeAndFlush(HeartbeatFrame.INSTANCE);
            } else if (idle.state() == IdleState.READER_IDLE) {
                LOG.warn("No frame from {} within two heartbeat intervals; closing the connection.", connection.address());
                context.close();
            }
        } else {
            context.fireUserEventTriggered(event);
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext context) {
        connection.onChannelInactive(context.channel(), handshake);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
        LOG.warn("The connection to {} failed and will be closed: {}", connection.address(), cause.getMessage());
        // During the handshake (a TLS failure, typically) the caller learns the cause, not just "closed".
        handshake.completeExceptionally(new ConnectionLostException(
                "could not connect to " + connection.address() + ": " + cause.getMessage(), cause));
        context.close();
    }
}
