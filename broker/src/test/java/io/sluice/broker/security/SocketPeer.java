package io.sluice.broker.security;

import io.netty.buffer.ByteBuf;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ReferenceCountUtil;
import io.sluice.protocol.Frame;
import io.sluice.protocol.FrameDecoder;
import io.sluice.protocol.FrameEncoder;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.HelloOkFrame;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.List;

/**
 * A blocking, hostile-capable test peer on a plain socket: writes frames or raw bytes, and decodes what
 * it reads with the real codec (through an {@link EmbeddedChannel}). Frames read are kept only as their
 * {@code toString} and type-specific records that hold no buffers (ERROR, CLOSE, OK, HELLO_OK).
 */
final class SocketPeer implements AutoCloseable {
    private final Socket socket;
    private final InputStream in;
    private final EmbeddedChannel codec = new EmbeddedChannel(new FrameDecoder(16 << 20), new FrameEncoder(16 << 20));

    SocketPeer(int port) throws IOException {
        this("127.0.0.1", port);
    }

    /**
     * From {@code localAddress} to the same address: binding the local end first makes it the source
     * the broker sees (a loopback address other than 127.0.0.1 is another source, as on Linux).
     */
    SocketPeer(String localAddress, int port) throws IOException {
        socket = new Socket();
        socket.bind(new java.net.InetSocketAddress(localAddress, 0));
        socket.connect(new java.net.InetSocketAddress(localAddress, port), 10_000);
        socket.setSoTimeout(200);
        in = socket.getInputStream();
    }

    static SocketPeer hello(int port) throws Exception {
        SocketPeer peer = new SocketPeer(port);
        peer.send(new HelloFrame(1, 1, "hostile-test", 1 << 20, 0, "", ""));
        peer.expect(HelloOkFrame.class, 10_000);
        return peer;
    }

    /** Writes every buffer the encoder makes of {@code frame} (a PUBLISH is a header and its body). */
    void send(Frame frame) throws IOException {
        codec.writeOutbound(frame);
        ByteBuf buf;
        while ((buf = codec.readOutbound()) != null) {
            try {
                byte[] bytes = new byte[buf.readableBytes()];
                buf.readBytes(bytes);
                sendRaw(bytes);
            } finally {
                buf.release();
            }
        }
    }

    /** The socket's own address: the remote address of the broker's channel of this connection. */
    java.net.InetSocketAddress localAddress() {
        return (java.net.InetSocketAddress) socket.getLocalSocketAddress();
    }

    void sendRaw(byte[] bytes) throws IOException {
        socket.getOutputStream().write(bytes);
        socket.getOutputStream().flush();
    }

    /** Reads until a frame of the type arrives, skipping others; fails on EOF or timeout. */
    <T extends Frame> T expect(Class<T> type, long timeoutMs) throws IOException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            Frame f = next(deadline);
            if (f == null) {
                break;
            }
            if (type.isInstance(f)) {
                return type.cast(f);
            }
            ReferenceCountUtil.release(f);
        }
        throw new AssertionError("no " + type.getSimpleName() + " within " + timeoutMs + " ms");
    }

    /** Reads every frame until the broker closes the connection; fails if it has not within the timeout. */
    List<Frame> readUntilClosed(long timeoutMs) throws IOException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        List<Frame> frames = new ArrayList<>();
        while (true) {
            Frame f = next(deadline);
            if (f == null) {
                return frames;
            }
            frames.add(f);
        }
    }

    /** The next frame, or null at EOF; AssertionError at the deadline. */
    private Frame next(long deadline) throws IOException {
        byte[] buffer = new byte[8192];
        while (true) {
            Object decoded = codec.readInbound();
            if (decoded != null) {
                return (Frame) decoded;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("the broker neither answered nor closed the connection in time");
            }
            int n;
            try {
                n = in.read(buffer);
            } catch (SocketTimeoutException e) {
                continue;
            } catch (IOException e) {
                return null;
            }
            if (n < 0) {
                return null;
            }
            codec.writeInbound(io.netty.buffer.Unpooled.wrappedBuffer(buffer, 0, n));
        }
    }

    @Override
    public void close() throws IOException {
        socket.close();
        codec.finishAndReleaseAll();
    }
}
