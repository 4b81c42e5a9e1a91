package io.sluice.broker;

import io.netty.channel.Channel;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.FrameType;
import io.sluice.protocol.HeartbeatFrame;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a client's frames make the broker write back is bounded, whether or not the client reads it (InboundGate, rule
 * H4; docs/protocol.md, "Errors"). Found by a review: the broker went on reading a client that never read its answers,
 * and one ACK frame naming thousands of ranges not outstanding made one ERROR per range, so a few MB sent grew its
 * outbound buffer by tens of MB.
 */
@Timeout(120)
class ClientThatDoesNotReadTest {
    private static final int TAG = 7;

    @TempDir
    Path dir;

    private static Socket consumer(Broker broker, int receiveBufferBytes) throws IOException {
        Socket s = new Socket();
        s.setReceiveBufferSize(receiveBufferBytes);
        s.connect(new InetSocketAddress("127.0.0.1", broker.port()));
        OutputStream out = s.getOutputStream();
        out.write(FrameBytes.of(new HelloFrame(1, 1, "no-reader", 0, 0, "", "")));
        out.write(FrameBytes.of(new DeclareQueueFrame(1, "q", QueueSettings.EMPTY)));
        out.write(FrameBytes.of(new SubscribeFrame(2, TAG, "q", 10)));
        out.flush();
        return s;
    }

    /** One frame as read off the socket. */
    private record Read(int type, String body) {
    }

    private static Read next(DataInputStream in) throws IOException {
        int length = in.readInt();
        int type = in.readUnsignedByte();
        in.readUnsignedByte();
        byte[] body = new byte[length - 2];
        in.readFully(body);
        return new Read(type, new String(body, StandardCharsets.UTF_8));
    }

    /** Reads frames until the {@code oks}-th OK; returns the ERROR frames' bodies met on the way. */
    private static List<String> errorsUntilOks(DataInputStream in, int oks) throws IOException {
        List<String> errors = new ArrayList<>();
        int seen = 0;
        while (true) {
            Read frame = next(in);
            if (frame.type() == FrameType.ERROR.code()) {
                errors.add(frame.body());
            }
            if (frame.type() == FrameType.OK.code() && ++seen == oks) {
                return errors;
            }
        }
    }

    private static String nextError(DataInputStream in) throws IOException {
        while (true) {
            Read frame = next(in);
            if (frame.type() == FrameType.ERROR.code()) {
                return frame.body();
            }
        }
    }

    @Test
    void anAckOfManyRangesNotOutstandingIsAnsweredByOneError() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); Socket s = consumer(broker, 1 << 16)) {
            List<IdRange> ranges = new ArrayList<>();
            for (long i = 0; i < 5_000; i++) {
                ranges.add(new IdRange(1_000_000 + 2 * i, 1_000_000 + 2 * i));
            }
            OutputStream out = s.getOutputStream();
            out.write(FrameBytes.of(new AckFrame(TAG, ranges)));
            // The queue handles its consumer's frames in order: this one's ERROR comes after every ERROR of the first.
            out.write(FrameBytes.of(new AckFrame(TAG, List.of(new IdRange(9, 9)))));
            out.flush();
            DataInputStream in = new DataInputStream(s.getInputStream());
            errorsUntilOks(in, 2); // the DECLARE's and the SUBSCRIBE's
            List<String> errors = new ArrayList<>();
            do {
                errors.add(nextError(in));
            } while (!errors.get(errors.size() - 1).contains("message ids 9..9"));
            assertEquals(2, errors.size(), "one ERROR for each frame, not one per range: " + errors.size());
            assertTrue(errors.get(0).contains("5000 ranges of message ids, the first 1000000..1000000"), errors.get(0));
        }
    }

    /** Sends {@code frame} {@code frames} times on a thread of its own, in writes of about 64 KiB. */
    private static CompletableFuture<Void> sendInBatches(Socket s, byte[] frame, int frames) {
        return CompletableFuture.runAsync(() -> {
            ByteArrayOutputStream batch = new ByteArrayOutputStream();
            try {
                OutputStream out = s.getOutputStream();
                for (int i = 0; i < frames; i++) {
                    batch.write(frame);
                    if (batch.size() >= 64 << 10 || i == frames - 1) {
                        out.write(batch.toByteArray());
                        batch.reset();
                    }
                }
                out.flush();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
    }

    /**
     * Rule H4 with a client that reads, slowly: the broker reads it again only once it has drained the kernel's send queue
     * and the outbound buffer below its low mark, which takes it many heartbeat intervals, while its frames wait unread in
     * its socket. That silence is the broker's (ClientSessionAdapter.silenceIsTheBrokers): the connection stays open and
     * every frame is answered. On the old main the broker closed it with HEARTBEAT_TIMEOUT two intervals after its last
     * read (theBrokerStopsReadingAClientThatDoesNotReadItsAnswersAndGoesOnOnceItDoes failed so at load 35).
     */
    @Test
    void aClientThatReadsItsAnswersSlowlyIsNotClosedForTheSilenceTheBrokersPauseMakes() throws Exception {
        int frames = 100_000;
        byte[] ack = FrameBytes.of(new AckFrame(TAG, List.of(new IdRange(5_000_000, 5_000_000)))); // one ERROR each
        try (Broker broker = TestBrokers.start(dir, Map.of("broker.heartbeat-interval-ms", "300"));
             Socket s = consumer(broker, 4096)) {
            DataInputStream in = new DataInputStream(s.getInputStream());
            errorsUntilOks(in, 2);
            CompletableFuture<Void> sent = sendInBatches(s, ack, frames);
            Thread heartbeats = heartbeatsUntilInterrupted(s);
            TestAwait.until("the client's connection is open", () -> broker.connections().size() == 1);
            Channel channel = broker.connections().iterator().next();
            TestAwait.until("the broker stops reading the client that does not read (rule H4)", Duration.ofSeconds(30),
                    () -> !channel.config().isAutoRead());
            // The client reads 16 KiB every 20 ms (a slow reader, not a wait for the broker) until the broker reads it again.
            int errors = 0;
            int unpaced = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!channel.config().isAutoRead()) {
                assertTrue(System.nanoTime() < deadline, "the broker did not read the client again within 60 s; " + errors
                        + " answers read");
                Read frame = next(in);
                assertTrue(frame.type() != FrameType.CLOSE.code(), "closed while the client read: " + frame.body());
                errors += frame.type() == FrameType.ERROR.code() ? 1 : 0;
                unpaced += Integer.BYTES + 2 + frame.body().length();
                if (unpaced >= 16 << 10) {
                    unpaced = 0;
                    java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
                }
            }
            while (errors < frames) {
                Read frame = next(in);
                assertTrue(frame.type() != FrameType.CLOSE.code(), "closed after " + errors + " answers: " + frame.body());
                errors += frame.type() == FrameType.ERROR.code() ? 1 : 0;
            }
            sent.get(30, TimeUnit.SECONDS);
            heartbeats.interrupt();
            assertTrue(channel.isActive(), "the connection is open once every frame is answered");
        }
    }

    /**
     * Sends a HEARTBEAT every 100 ms, as a client does (this one's interval is 300 ms), until interrupted or the socket
     * closes: once the client has sent its ACKs, the broker must not take its silence for a client gone.
     */
    private static Thread heartbeatsUntilInterrupted(Socket s) {
        byte[] heartbeat = FrameBytes.of(HeartbeatFrame.INSTANCE);
        Thread thread = new Thread(() -> {
            try {
                OutputStream out = s.getOutputStream();
                while (!Thread.currentThread().isInterrupted()) {
                    out.write(heartbeat); // one write per frame: the socket keeps it whole beside the ACKs' writes
                    java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
                }
            } catch (IOException closed) {
                // the test is over
            }
        }, "client-heartbeats");
        thread.setDaemon(true);
        thread.start();
        return thread;
    }

    @Test
    void theBrokerStopsReadingAClientThatDoesNotReadItsAnswersAndGoesOnOnceItDoes() throws Exception {
        int frames = 100_000;
        byte[] ack = FrameBytes.of(new AckFrame(TAG, List.of(new IdRange(5_000_000, 5_000_000)))); // one ERROR each
        try (Broker broker = TestBrokers.start(dir, Map.of()); Socket s = consumer(broker, 4096)) {
            DataInputStream in = new DataInputStream(s.getInputStream());
            errorsUntilOks(in, 2); // subscribed, and the declare's own pause of reading (rule H1) is over
            CompletableFuture<Void> sent = sendInBatches(s, ack, frames);
            AtomicLong mostPending = new AtomicLong();
            TestAwait.until("the client's connection is open", () -> broker.connections().size() == 1);
            Channel channel = broker.connections().iterator().next();
            TestAwait.until("the broker stops reading the client that does not read (or answers everything it sent)",
                    Duration.ofSeconds(30), () -> {
                        mostPending.accumulateAndGet(TestBrokers.outboundPending(channel), Math::max);
                        return !channel.config().isAutoRead() || mostPending.get() > (8L << 20);
                    });
            mostPending.accumulateAndGet(TestBrokers.outboundPending(channel), Math::max);
            assertTrue(mostPending.get() < (4L << 20), "at most the 1 MiB high water mark and one read's answers wait in the "
                    + "broker for a client that does not read; it held " + mostPending.get() + " bytes");

            // The client reads now: the broker reads on, and every frame is answered.
            int errors = 0;
            while (errors < frames) {
                int length = in.readInt();
                int type = in.readUnsignedByte();
                in.skipNBytes(length - 1);
                if (type == FrameType.ERROR.code()) {
                    errors++;
                }
            }
            sent.get(30, TimeUnit.SECONDS);
            assertEquals(frames, errors);
            assertTrue(channel.config().isAutoRead(), "reading resumed once the client read");
        }
    }
}
