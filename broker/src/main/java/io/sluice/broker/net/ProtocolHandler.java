package io.sluice.broker.net;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.timeout.IdleState;
import io.netty.handler.timeout.IdleStateEvent;
import io.sluice.broker.error.Sentences;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.ProtocolException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.net.ssl.SSLException;

/**
 * What the two stages of a connection ({@link HandshakeHandler} until HELLO_OK, then
 * {@link ClientSessionAdapter}) share: a protocol violation is answered with ERROR and CLOSE and the
 * connection closed; exceptions and a silent peer end the same way. Both log under
 * {@code ClientSessionAdapter}'s name, one logger for a connection's whole life.
 */
abstract class ProtocolHandler extends ChannelInboundHandlerAdapter {
    static final Logger LOG = LoggerFactory.getLogger(ClientSessionAdapter.class);

    final ConnectionSecurity security;

    ProtocolHandler(ConnectionSecurity security) {
        this.security = security;
    }

    /** The client's name for log lines ("?" before HELLO). */
    abstract String clientName();

    /** Reports a protocol violation and closes the connection. */
    void fail(ChannelHandlerContext ctx, ErrorCode code, String sentence) {
        if (!ctx.channel().isActive()) {
            return;
        }
        String message = Sentences.fit(sentence);
        security.rejectionLog().info(LOG, "Closing the connection from {} (client '{}'): {} {}.", ctx.channel().remoteAddress(),
                clientName(), code, message);
        ctx.write(new ErrorFrame(0, code, message));
        LastFrame.writeAndClose(ctx, new CloseFrame(code, message));
    }

    /** The write side was idle for a heartbeat interval: only an open connection sends heartbeats. */
    void writerIdle(ChannelHandlerContext ctx) {
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof IdleStateEvent idle) {
            if (LastFrame.sent(ctx.channel())) {
                return; // the connection is closing (LastFrame): the client owes no frame, nor the broker a heartbeat
            }
            if (idle.state() == IdleState.READER_IDLE) {
                if (silenceIsTheBrokers()) {
                    return;
                }
                fail(ctx, ErrorCode.HEARTBEAT_TIMEOUT, "no frame for two heartbeat intervals");
            } else if (idle.state() == IdleState.WRITER_IDLE) {
                writerIdle(ctx);
            }
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    /**
     * Whether the broker itself keeps this connection silent, by not reading it while the client waits for its
     * publishes to settle or reads what the broker wrote: two heartbeat intervals without a frame then say nothing of
     * the client. On the event loop.
     */
    boolean silenceIsTheBrokers() {
        return false;
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        Throwable root = cause;
        while (root.getCause() != null && !(root instanceof ProtocolException)) {
            root = root.getCause();
        }
        if (root instanceof ProtocolException pe) {
            if (pe.errorCode() == ErrorCode.FRAME_TOO_LARGE) {
                security.limits().countOversizedFrame();
            }
            fail(ctx, pe.errorCode(), pe.getMessage());
        } else if (isTlsFailure(cause)) {
            security.rejectionLog().info(LOG, "TLS failed on the connection from {}: {}.", ctx.channel().remoteAddress(), root.getMessage());
            ctx.close();
        } else if (root instanceof java.io.IOException) {
            ctx.close();
        } else {
            LOG.error("Connection from {} failed.", ctx.channel().remoteAddress(), cause);
            fail(ctx, ErrorCode.INTERNAL_ERROR, "the broker failed on this connection; the broker log has the details");
        }
    }

    private static boolean isTlsFailure(Throwable cause) {
        for (Throwable t = cause; t != null; t = t.getCause()) {
            if (t instanceof SSLException || t instanceof io.netty.handler.ssl.NotSslRecordException) {
                return true;
            }
        }
        return false;
    }
}
