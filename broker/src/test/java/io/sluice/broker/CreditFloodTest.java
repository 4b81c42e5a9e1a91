package io.sluice.broker;

import io.sluice.broker.queue.BrokerQueue;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.CreditFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Frames that change nothing cost the queue no dispatch pass (found by a review): each CREDIT 0 went to the queue's
 * executor and scheduled a pass, so a client sending a million of them had the broker run dispatch passes by the
 * hundred thousand for nothing; a NACK naming nothing outstanding did the same.
 */
@Timeout(300)
class CreditFloodTest {
    private static final int TAG = 7;
    private static final int FLOOD = 1_000_000;

    @TempDir
    Path dir;

    @Test
    void aFloodOfCreditZeroCostsNoDispatchPassAndOthersAreServedMeanwhile() throws Exception {
        // No heartbeats: the other connections wait silently while the flood is read, which a loaded machine may stretch.
        try (Broker broker = TestBrokers.start(dir, Map.of("broker.heartbeat-interval-ms", "600000")); Socket flooder = new Socket();
             RawClient other = RawClient.connected(broker.port()); RawClient otherConsumer = RawClient.connected(broker.port())) {
            flooder.connect(new InetSocketAddress("127.0.0.1", broker.port()));
            OutputStream out = flooder.getOutputStream();
            DataInputStream in = new DataInputStream(flooder.getInputStream());
            out.write(FrameBytes.of(new HelloFrame(1, 1, "flooder", 0, 0, "", "")));
            out.write(FrameBytes.of(new DeclareQueueFrame(1, "q", QueueSettings.EMPTY)));
            out.write(FrameBytes.of(new SubscribeFrame(2, TAG, "q", 0)));
            out.flush();
            awaitOk(in, 2);
            BrokerQueue q = broker.queues().get("q");
            long passesBefore = onExecutor(q);

            CompletableFuture<Void> flood = CompletableFuture.runAsync(() -> {
                try {
                    byte[] credit = FrameBytes.of(new CreditFrame(TAG, 0));
                    ByteArrayOutputStream batch = new ByteArrayOutputStream();
                    for (int i = 0; i < FLOOD; i++) {
                        batch.write(credit);
                        if (batch.size() >= 64 << 10) {
                            out.write(batch.toByteArray());
                            batch.reset();
                        }
                    }
                    batch.write(FrameBytes.of(new DeclareQueueFrame(3, "q", QueueSettings.EMPTY))); // answered after them all
                    out.write(batch.toByteArray());
                    out.flush();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });

            // Other connections publish and consume on another queue while the flood goes on, and are served.
            // A bound on eventually: the flood shares the loops fairly, but on a loaded machine it may take them a while.
            java.time.Duration served = java.time.Duration.ofSeconds(90);
            other.send(new DeclareQueueFrame(1, "other", QueueSettings.EMPTY));
            other.expect(OkFrame.class, served);
            otherConsumer.send(new SubscribeFrame(2, 1, "other", 1000));
            otherConsumer.expect(OkFrame.class, served);
            for (int i = 1; i <= 100; i++) {
                PublishFrameBuilder b = new PublishFrameBuilder(other.alloc(), "other");
                b.add(9, i, List.of(), ("m" + i).getBytes(StandardCharsets.UTF_8));
                other.send(b.build());
                assertEquals(List.of(IdRange.single(i)), other.expect(ConfirmFrame.class, served).sequences());
            }
            assertEquals(100, otherConsumer.deliveries(100, served).size());

            flood.get(120, TimeUnit.SECONDS);
            awaitOk(in, 1); // the broker read and handled every CREDIT before it
            long passes = onExecutor(q) - passesBefore;
            assertEquals(0, passes, FLOOD + " CREDIT 0 frames cost " + passes + " dispatch passes");
        }
    }

    @Test
    void aNackOfNothingOutstandingCostsNoDispatchPass() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            c.send(new DeclareQueueFrame(1, "q", QueueSettings.EMPTY));
            c.expect(OkFrame.class);
            c.send(new SubscribeFrame(2, TAG, "q", 10));
            c.expect(OkFrame.class);
            BrokerQueue q = broker.queues().get("q");
            long passesBefore = onExecutor(q);
            for (int i = 0; i < 100; i++) {
                c.send(new NackFrame(TAG, NackAction.REQUEUE, 0, List.of(IdRange.single(1_000 + i))));
                assertEquals(ErrorCode.UNKNOWN_MESSAGE_ID, c.expect(ErrorFrame.class).errorCode());
            }
            long passes = onExecutor(q) - passesBefore;
            assertEquals(0, passes, "100 NACKs of nothing outstanding cost " + passes + " dispatch passes");
        }
    }

    /**
     * The queue's dispatch passes, read on its executor after every task handed to it before and every pass those
     * scheduled (a second turn: a pass is queued behind the task that scheduled it).
     */
    private static long onExecutor(BrokerQueue q) throws Exception {
        q.executor().submit(() -> { }).get(30, TimeUnit.SECONDS);
        return q.executor().submit(q::dispatchPasses).get(30, TimeUnit.SECONDS);
    }

    private static void awaitOk(DataInputStream in, int oks) throws IOException {
        for (int seen = 0; seen < oks; ) {
            int length = in.readInt();
            int type = in.readUnsignedByte();
            in.readFully(new byte[length - 1]);
            if (type == io.sluice.protocol.FrameType.OK.code()) {
                seen++;
            } else {
                assertTrue(type != io.sluice.protocol.FrameType.ERROR.code() && type != io.sluice.protocol.FrameType.CLOSE.code(),
                        "an ERROR or CLOSE where an OK was awaited: type " + type);
            }
        }
    }
}
