package io.sluice.broker;

import io.netty.buffer.Unpooled;
import io.netty.util.ReferenceCountUtil;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.TxAckFrame;
import io.sluice.protocol.TxBeginFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxPublishFrame;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** Raw frames the transaction tests send and read over a {@link RawClient}. */
final class TransactionFrames {
    private static final long PRODUCER = 0x7A_0001L;

    private TransactionFrames() {
    }

    /** Declares {@code queue} with no settings; returns its message count. */
    static long declare(RawClient c, String queue) throws InterruptedException {
        c.send(new DeclareQueueFrame(1, queue, QueueSettings.EMPTY));
        return c.expect(OkFrame.class).messageCount().orElseThrow();
    }

    /** Unacknowledged messages of {@code queue}: a passive declare's count. */
    static long count(RawClient c, String queue) throws InterruptedException {
        c.send(new DeclareQueueFrame(1, queue, QueueSettings.EMPTY, true));
        return c.expect(OkFrame.class).messageCount().orElseThrow();
    }

    /** Publishes {@code payloads} to {@code queue} in one PUBLISH and waits for its CONFIRM. */
    static void publish(RawClient c, String queue, String... payloads) throws InterruptedException {
        PublishFrameBuilder b = new PublishFrameBuilder(c.alloc(), queue);
        long s = System.nanoTime();
        for (String p : payloads) {
            b.add(PRODUCER, s++, List.of(), p.getBytes(StandardCharsets.UTF_8));
        }
        c.send(b.build());
        c.expect(ConfirmFrame.class);
    }

    /** Sends one TX_PUBLISH of {@code payloads} to {@code queue} in transaction {@code txn}. */
    static void txPublish(RawClient c, long txn, String queue, String... payloads) {
        PublishFrameBuilder b = new PublishFrameBuilder(c.alloc(), queue);
        for (String p : payloads) {
            b.add(0, 0, List.of(), p.getBytes(StandardCharsets.UTF_8));
        }
        c.send(new TxPublishFrame(txn, b.build()));
    }

    /**
     * Sends {@code frames} in one write: the broker's loop reads them together, the later ones while the earlier are
     * under way. Each frame is released once encoded, as a channel's write would (a TX_PUBLISH holds a pooled buffer).
     */
    static void sendInOneWrite(RawClient c, Frame... frames) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (Frame f : frames) {
            try {
                out.write(FrameBytes.of(f));
            } finally {
                ReferenceCountUtil.release(f);
            }
        }
        c.sendRaw(Unpooled.wrappedBuffer(out.toByteArray()));
    }

    /** Declares "orders" and "invoices", publishes o1 and o2 to "orders" and returns their deliveries to consumer 7 of {@code c}. */
    static List<RawClient.Delivery> ordersDelivered(RawClient c) throws InterruptedException {
        declare(c, "orders");
        declare(c, "invoices");
        publish(c, "orders", "o1", "o2");
        c.send(new SubscribeFrame(2, 7, "orders", 10));
        c.expect(OkFrame.class);
        return c.deliveries(2);
    }

    /**
     * Commits transaction 1 of {@code c}: o1 and o2 of "orders" ({@link #ordersDelivered}) acknowledged, i1 published to
     * "invoices"; returns once the broker answered the commit with OK.
     */
    static void commitOrdersForAnInvoice(RawClient c) throws InterruptedException {
        List<RawClient.Delivery> orders = ordersDelivered(c);
        c.send(new TxBeginFrame(1, 0));
        c.send(new TxAckFrame(1, 7, List.of(range(orders))));
        txPublish(c, 1, "invoices", "i1");
        c.send(new TxCommitFrame(9, 1));
        long answered = c.expect(OkFrame.class).requestId();
        if (answered != 9) {
            throw new AssertionError("an OK for request " + answered + ", not for the commit (9)");
        }
    }

    static List<String> payloads(List<RawClient.Delivery> deliveries) {
        List<String> out = new ArrayList<>();
        for (RawClient.Delivery d : deliveries) {
            out.add(new String(d.payload(), StandardCharsets.UTF_8));
        }
        return out;
    }

    /** The ids of {@code deliveries}, first to last, as one range. */
    static IdRange range(List<RawClient.Delivery> deliveries) {
        return new IdRange(deliveries.get(0).id(), deliveries.get(deliveries.size() - 1).id());
    }
}
