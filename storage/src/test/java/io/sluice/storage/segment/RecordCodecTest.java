package io.sluice.storage.segment;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RecordCodecTest {
    @Test
    void shouldRoundTripEveryField() {
        RecordCodec writer = new RecordCodec();
        writer.encode(RecordCodec.FLAG_RELOCATED, 0x500000007L, 3, 11, 12, 13,
                ByteBuffer.wrap(new byte[] {1, 2}), ByteBuffer.wrap(new byte[] {9, 8, 7}));
        RecordCodec reader = new RecordCodec();
        byte[] copy = Arrays.copyOf(writer.array(), writer.length());
        System.arraycopy(copy, 0, reader.arrayFor(copy.length), 0, copy.length);
        assertNull(reader.loaded(copy.length));
        assertTrue(reader.relocated());
        assertEquals(0x500000007L, reader.originalId());
        assertEquals(3, reader.deliveryCount());
        assertEquals(11, reader.producerId());
        assertEquals(12, reader.producerSequence());
        assertEquals(13, reader.timestampMillis());
        assertEquals(2, reader.headersLength());
        assertEquals(3, reader.payloadLength());
        assertEquals(9, reader.array()[reader.payloadOffset()]);
    }

    @Test
    void shouldDetectEverySingleBitFlip() {
        RecordCodec writer = new RecordCodec();
        byte[] payload = new byte[64];
        new Random(42).nextBytes(payload);
        writer.encode(0, -1, 0, 1, 2, 3, null, ByteBuffer.wrap(payload));
        byte[] good = Arrays.copyOf(writer.array(), writer.length());
        RecordCodec reader = new RecordCodec();
        for (int bit = 0; bit < good.length * 8; bit++) {
            byte[] bad = good.clone();
            bad[bit / 8] ^= (byte) (1 << (bit % 8));
            System.arraycopy(bad, 0, reader.arrayFor(bad.length), 0, bad.length);
            assertNotNull(reader.loaded(bad.length), "flip of bit " + bit + " went unnoticed");
        }
    }

    @Test
    void shouldRejectATruncatedRecord() {
        RecordCodec writer = new RecordCodec();
        writer.encode(0, -1, 0, 1, 2, 3, null, ByteBuffer.wrap(new byte[100]));
        RecordCodec reader = new RecordCodec();
        System.arraycopy(writer.array(), 0, reader.arrayFor(writer.length()), 0, writer.length());
        String problem = reader.loaded(writer.length() - 1);
        assertNotNull(problem);
        assertTrue(problem.contains("does not match"), problem);
    }
}
