package io.sluice.broker;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.util.concurrent.SingleThreadEventExecutor;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FrameDecoder;
import io.sluice.protocol.FrameType;
import io.sluice.protocol.HeartbeatFrame;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule L2 of LastFrame, at the socket: a connection the broker closes after a last frame while input it did not read
 * waits in its socket must still hand the client every frame written before, the last one included, and then its end.
 * GracefulShutdownTest's client logged "Connection reset by peer" instead of the NOT_CONFIRMED_SHUTDOWN the stopping broker
 * had just written: the broker closed a socket holding the client's late publish (not read, rule H3), so the kernel
 * sent a reset, which drops what still waits in the broker's send queue. Here the client's full receive window keeps
 * the end of a DELIVER and the CLOSE in that queue when the connection closes; on the old main the client read the
 * beginning of the DELIVER and then "Connection reset".
 */
@Timeout(120)
class LastFrameGracefulCloseTest {
    private static final int TAG = 7;
    /** Far more than the client's receive buffer holds: the rest of the DELIVER, and the CLOSE, wait in the broker's send queue. */
    private static final int PAYLOAD_BYTES = 256 << 10;

    @TempDir
    Path dir;

    @Test
    void aClientThatSentMoreAfterTheStopBeganGetsEveryFrameUpToTheCloseAndThenTheEndOfTheStream() throws Exception {
        Broker broker = TestBrokers.start(dir, Map.of("broker.heartbeat-interval-ms", "600000"));
        Thread closer = null;
        try (Socket s = new Socket()) {
            broker.queues().declare("q", QueueSettings.EMPTY);
            try (Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                    .reconnectPolicy(ReconnectPolicy.DISABLED).build()); Producer p = c.createProducer("q", ProducerOptions.DEFAULT)) {
                p.send(new byte[PAYLOAD_BYTES]);
            }
            TestAwait.until("the producer's connection closed", () -> broker.connections().isEmpty());
            s.setReceiveBufferSize(4096);
            s.connect(new InetSocketAddress("127.0.0.1", broker.port()));
            OutputStream out = s.getOutputStream();
            out.write(FrameBytes.of(new HelloFrame(1, 1, "reads-late", 0, 0, "", "")));
            out.write(FrameBytes.of(new SubscribeFrame(1, TAG, "q", 1)));
            out.flush();
            TestAwait.until("the client's connection is open", () -> broker.connections().size() == 1);
            Channel channel = broker.connections().iterator().next();
            InputStream in = s.getInputStream();
            // More than HELLO_OK and OK: the DELIVER is arriving. Once the broker holds none of it, all of it is in the
            // kernel: some in the client's receive buffer, the rest in the broker's send queue, which the client's full
            // window holds back.
            TestAwait.until("the DELIVER filling the client's receive buffer", () -> available(in) > 1024);
            TestAwait.until("the broker handing all of the DELIVER to its socket", () -> TestBrokers.outboundPending(channel) == 0);

            // The connection's loop is held while the stop begins, so that the client's next frame reaches the broker's
            // socket before the loop can read it: the loop runs the stop of reading (rule H3) first, as its next task.
            SingleThreadEventExecutor loop = (SingleThreadEventExecutor) channel.eventLoop();
            CountDownLatch release = new CountDownLatch(1);
            TestAwait.hold(loop, release);
            closer = new Thread(broker::close, "last-frame-test-closer");
            closer.start();
            try {
                TestAwait.until("the stop of reading queued behind the held loop", () -> loop.pendingTasks() > 0);
                out.write(FrameBytes.of(HeartbeatFrame.INSTANCE)); // never read by the stopping broker
                out.flush();
            } finally {
                release.countDown();
            }
            TestAwait.until("the broker closing the connection", Duration.ofSeconds(30), () -> !channel.isActive());

            List<Integer> types = new ArrayList<>();
            CloseFrame close = null;
            DataInputStream frames = new DataInputStream(in);
            int length;
            while ((length = readLength(frames)) >= 0) {
                byte[] frame = new byte[Integer.BYTES + length];
                frames.readFully(frame, Integer.BYTES, length);
                int type = frame[Integer.BYTES] & 0xFF;
                types.add(type);
                if (type == FrameType.CLOSE.code()) {
                    close = (CloseFrame) FrameDecoder.decodeFrame(Unpooled.wrappedBuffer(frame).setInt(0, length), 1 << 20);
                }
            }
            assertTrue(types.contains(FrameType.DELIVER.code()), "the DELIVER arrived whole: " + types);
            assertEquals(FrameType.CLOSE.code(), types.get(types.size() - 1), "the CLOSE is the last frame, then the end: " + types);
            assertEquals(ErrorCode.NONE, close.errorCode());
            assertTrue(close.reason().contains("shutting down"), close.reason());
        } finally {
            if (closer == null) {
                broker.close();
            } else {
                closer.join(30_000);
                assertFalse(closer.isAlive(), "the broker's stop ended");
            }
        }
    }

    /** The next frame's length, or -1 at the end of the stream (a reset throws, as the client's next read failed). */
    private static int readLength(DataInputStream frames) throws IOException {
        int first = frames.read();
        if (first < 0) {
            return -1;
        }
        return first << 24 | frames.readUnsignedByte() << 16 | frames.readUnsignedByte() << 8 | frames.readUnsignedByte();
    }

    private static int available(InputStream in) {
        try {
            return in.available();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
