package io.sluice.broker.cluster;

import io.netty.buffer.ByteBufAllocator;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishCursor;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ShardEntryTest {
    private static final int MAX_FRAME = 1 << 20;

    @Test
    void shouldRoundTripAPublishBatchWithItsOrigin() {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "orders");
        for (int i = 1; i <= 100; i++) {
            builder.add(42, i, List.of(), ("message " + i).getBytes(StandardCharsets.UTF_8));
        }
        PublishFrame publish = builder.build();
        byte[] entry;
        try {
            entry = ShardEntry.encode(3, 77, "orders", publish, MAX_FRAME);
        } finally {
            publish.release();
        }
        ShardEntry decoded = ShardEntry.decode(entry, MAX_FRAME);
        assertEquals(3, decoded.originNode());
        assertEquals(77, decoded.originCall());
        assertEquals("orders", decoded.queue());
        PublishFrame frame = (PublishFrame) decoded.frame();
        try {
            assertEquals(100, frame.messageCount());
            PublishCursor cursor = frame.cursor();
            int seen = 0;
            while (cursor.next()) {
                seen++;
                assertEquals(42, cursor.producerId());
                assertEquals(seen, cursor.sequence());
            }
            assertEquals(100, seen);
        } finally {
            frame.release();
        }
    }

    /** Rule R10: a PUBLISH of named producers carries the epochs the leader resolved; one of unnamed ones stays version 1. */
    @Test
    void shouldCarryTheLeadersEpochsOfNamedProducers() {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "orders");
        builder.add(42, 1, List.of(), new byte[] {1});
        builder.add(43, 1, List.of(), new byte[] {2});
        PublishFrame publish = builder.build();
        io.sluice.broker.queue.ProducerEpochs epochs = new io.sluice.broker.queue.ProducerEpochs(new long[] {42, 43}, new int[] {2, -1});
        byte[] named;
        byte[] unnamed;
        try {
            named = ShardEntry.encode(1, 5, "orders", publish, epochs, MAX_FRAME);
            unnamed = ShardEntry.encode(1, 6, "orders", publish, io.sluice.broker.queue.ProducerEpochs.NONE, MAX_FRAME);
        } finally {
            publish.release();
        }
        assertEquals(ShardEntry.NAMED_PUBLISH_VERSION, named[0]);
        assertEquals(ShardEntry.VERSION, unnamed[0]);
        ShardEntry decoded = ShardEntry.decode(named, MAX_FRAME);
        try {
            assertEquals(epochs, decoded.epochs());
            assertEquals(2, decoded.epochs().epochOf(42));
            assertEquals(-1, decoded.epochs().epochOf(43));
            assertEquals(0, decoded.epochs().epochOf(44), "a producer not listed publishes at epoch 0");
            assertEquals(2, ((PublishFrame) decoded.frame()).messageCount());
        } finally {
            ((PublishFrame) decoded.frame()).release();
        }
        ShardEntry plain = ShardEntry.decode(unnamed, MAX_FRAME);
        assertEquals(io.sluice.broker.queue.ProducerEpochs.NONE, plain.epochs());
        ((PublishFrame) plain.frame()).release();

        byte[] ackWithEpochs = ShardEntry.encode(1, 7, "q", new AckFrame(0, List.of(IdRange.single(1))), MAX_FRAME);
        ackWithEpochs[0] = ShardEntry.NAMED_PUBLISH_VERSION;
        assertThrows(IllegalArgumentException.class, () -> ShardEntry.decode(ackWithEpochs, MAX_FRAME),
                "version 3 holds a PUBLISH and nothing else");
    }

    @Test
    void shouldRoundTripADeclareAndAnAck() {
        DeclareQueueFrame declare = new DeclareQueueFrame(0, "q", QueueSettings.EMPTY);
        assertEquals(declare, ShardEntry.decode(ShardEntry.encode(1, 1, "q", declare, MAX_FRAME), MAX_FRAME).frame());
        AckFrame ack = new AckFrame(0, List.of(new IdRange(5, 9), new IdRange(12, 12)));
        ShardEntry decoded = ShardEntry.decode(ShardEntry.encode(2, 9, "q", ack, MAX_FRAME), MAX_FRAME);
        assertEquals(ack, decoded.frame());
        assertEquals("q", decoded.queue());
    }

    @Test
    void shouldRejectAnotherVersionAndTrailingBytes() {
        byte[] entry = ShardEntry.encode(1, 1, "q", new AckFrame(0, List.of(IdRange.single(1))), MAX_FRAME);
        byte[] future = entry.clone();
        future[0] = 99;
        IllegalArgumentException version = assertThrows(IllegalArgumentException.class, () -> ShardEntry.decode(future, MAX_FRAME));
        assertTrue(version.getMessage().contains("version 99"), version.getMessage());
        byte[] longer = java.util.Arrays.copyOf(entry, entry.length + 1);
        assertThrows(IllegalArgumentException.class, () -> ShardEntry.decode(longer, MAX_FRAME));
    }

    /** Rule R10: a deliveries entry carries the leader's ids and counts, and one whose count disagrees with its length is refused. */
    @Test
    void shouldRoundTripDeliveries() {
        long[] ids = {1L << 32 | 5, 1L << 32 | 6, 2L << 32, 99};
        int[] counts = {1, 1, 3, 7};
        byte[] entry = ShardEntry.encodeDeliveries(2, 8, "orders", ids, counts, 3);
        ShardEntry decoded = ShardEntry.decode(entry, MAX_FRAME);
        assertEquals("orders", decoded.queue());
        assertEquals(2, decoded.originNode());
        assertEquals(8, decoded.originCall());
        assertTrue(decoded.frame() == null && decoded.deadLetter() == null);
        assertTrue(java.util.Arrays.equals(java.util.Arrays.copyOf(ids, 3), decoded.deliveries().ids()));
        assertTrue(java.util.Arrays.equals(java.util.Arrays.copyOf(counts, 3), decoded.deliveries().counts()));
        byte[] shorter = java.util.Arrays.copyOf(entry, entry.length - 1);
        IllegalArgumentException damaged = assertThrows(IllegalArgumentException.class, () -> ShardEntry.decode(shorter, MAX_FRAME));
        assertTrue(damaged.getMessage().contains("3 deliveries"), damaged.getMessage());
    }

    /** Rule R8: a dead-letter entry carries the leader's copy byte for byte, and a damaged one is refused. */
    @Test
    void shouldRoundTripADeadLetter() {
        ShardEntry.DeadLetterCopy copy = new ShardEntry.DeadLetterCopy("orders", 42L << 32 | 7, 11, 99,
                new byte[] {1, 2, 3}, new byte[] {4, 5});
        byte[] entry = ShardEntry.encodeDeadLetter(3, 5, "orders-dlq", copy);
        ShardEntry decoded = ShardEntry.decode(entry, MAX_FRAME);
        assertEquals(3, decoded.originNode());
        assertEquals(5, decoded.originCall());
        assertEquals("orders-dlq", decoded.queue());
        assertEquals(null, decoded.frame());
        assertEquals("orders", decoded.deadLetter().source());
        assertEquals(42L << 32 | 7, decoded.deadLetter().sourceId());
        assertEquals(11, decoded.deadLetter().producerId());
        assertEquals(99, decoded.deadLetter().producerSequence());
        assertTrue(java.util.Arrays.equals(copy.headers(), decoded.deadLetter().headers()));
        assertTrue(java.util.Arrays.equals(copy.payload(), decoded.deadLetter().payload()));
        assertThrows(IllegalArgumentException.class, () -> ShardEntry.decode(java.util.Arrays.copyOf(entry, entry.length - 1), MAX_FRAME));
        assertThrows(IllegalArgumentException.class, () -> ShardEntry.decode(java.util.Arrays.copyOf(entry, entry.length + 1), MAX_FRAME));
    }
}
