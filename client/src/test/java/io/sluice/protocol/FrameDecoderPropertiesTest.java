package io.sluice.protocol;

import io.netty.buffer.ByteBufAllocator;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterProperty;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * Whatever arrives, the decoder yields frames or a {@link ProtocolException}, never anything else, and
 * releases every buffer it was given.
 */
class FrameDecoderPropertiesTest {
    private static final byte[] VALID_STREAM = validStream();

    @AfterProperty
    void noLeaks() {
        LeakCheck.assertNoLeaksOrErrors();
    }

    @Property(tries = 500)
    void randomBytesYieldFramesOrAProtocolException(@ForAll @Size(max = 300) byte[] bytes,
                                                    @ForAll @Size(max = 5) List<@IntRange(min = 0, max = 300) Integer> cuts) {
        decodeTolerantly(split(bytes, cuts));
    }

    @Property(tries = 500)
    void randomBytesAfterAValidHeaderYieldFramesOrAProtocolException(
            @ForAll("frameTypes") int type, @ForAll @Size(max = 200) byte[] body) {
        decodeTolerantly(List.of(Wire.frame(type, 0, buffer -> buffer.writeBytes(body))));
    }

    @Property(tries = 1000)
    void bitFlipsInValidFramesYieldFramesOrAProtocolException(@ForAll @IntRange(min = 0, max = Integer.MAX_VALUE) int position,
                                                              @ForAll @IntRange(min = 0, max = 7) int bit) {
        byte[] damaged = VALID_STREAM.clone();
        int index = position % damaged.length;
        damaged[index] ^= (byte) (1 << bit);
        decodeTolerantly(List.of(damaged));
    }

    @Property(tries = 200)
    void anySplitOfAValidStreamDecodesTheSameFrames(@ForAll @Size(max = 30) List<@IntRange(min = 0, max = 200_000) Integer> cuts) {
        List<Frame> expected = SampleFrames.all(ByteBufAllocator.DEFAULT);
        List<Frame> decoded = Wire.decode(split(VALID_STREAM, cuts));
        try {
            assertEquals(expected, decoded);
        } finally {
            Wire.release(decoded);
            Wire.release(expected);
        }
    }

    @Property(tries = 300)
    void publishBatchesOfAnyShapeRoundTrip(@ForAll @Size(max = 20) List<@Size(max = 64) byte[]> payloads,
                                           @ForAll @Size(max = 3) List<@Size(max = 10) String> headerKeys) {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "q");
        List<MessageHeader> headers = new ArrayList<>();
        headerKeys.forEach(key -> headers.add(new MessageHeader(key.replaceAll("[\\uD800-\\uDFFF]", "?"), key.getBytes(StandardCharsets.UTF_16))));
        long sequence = 0;
        for (byte[] payload : payloads) {
            builder.add(42, sequence++, headers, payload);
        }
        PublishFrame sent = builder.build();
        List<Frame> decoded = Wire.decode(Wire.encodeRetained(sent));
        try {
            assertEquals(List.of(sent), decoded);
            PublishCursor cursor = ((PublishFrame) decoded.get(0)).cursor();
            for (int i = 0; cursor.next(); i++) {
                assertEquals(i, cursor.sequence());
                assertEquals(headers, cursor.headers());
                assertEquals(payloads.get(i).length, cursor.payloadLength());
            }
        } finally {
            Wire.release(decoded);
            sent.release();
        }
    }

    @Property(tries = 200)
    void transactionalPublishBatchesOfAnyShapeRoundTrip(@ForAll long txnId,
                                                        @ForAll @Size(max = 20) List<@Size(max = 64) byte[]> payloads) {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "invoices");
        payloads.forEach(payload -> builder.add(0, 0, List.of(), payload));
        TxPublishFrame sent = new TxPublishFrame(txnId == 0 ? 1 : txnId, builder.build());
        List<Frame> decoded = Wire.decode(Wire.encodeRetained(sent));
        try {
            assertEquals(List.of(sent), decoded);
            PublishCursor cursor = ((TxPublishFrame) decoded.get(0)).publish().cursor();
            for (int i = 0; cursor.next(); i++) {
                assertEquals(payloads.get(i).length, cursor.payloadLength());
            }
        } finally {
            Wire.release(decoded);
            sent.release();
        }
    }

    @Provide
    Arbitrary<Integer> frameTypes() {
        return Arbitraries.oneOf(
                Arbitraries.of(FrameType.values()).map(FrameType::code),
                Arbitraries.integers().between(0, 255));
    }

    /** Decodes, accepting a ProtocolException as the only failure; every other throwable fails the property. */
    private static void decodeTolerantly(List<byte[]> chunks) {
        try {
            Wire.release(Wire.decode(chunks));
        } catch (ProtocolException expected) {
            assertNotNull(expected.errorCode());
            assertFalse(expected.getMessage().isEmpty());
        }
    }

    private static List<byte[]> split(byte[] bytes, List<Integer> cuts) {
        List<Integer> points = new ArrayList<>();
        for (Integer cut : cuts) {
            points.add(bytes.length == 0 ? 0 : cut % (bytes.length + 1));
        }
        points.sort(Integer::compare);
        List<byte[]> chunks = new ArrayList<>();
        int from = 0;
        for (int point : points) {
            chunks.add(Arrays.copyOfRange(bytes, from, point));
            from = point;
        }
        chunks.add(Arrays.copyOfRange(bytes, from, bytes.length));
        return chunks;
    }

    private static byte[] validStream() {
        List<byte[]> frames = new ArrayList<>();
        for (Frame frame : SampleFrames.all(ByteBufAllocator.DEFAULT)) {
            frames.add(Wire.encode(frame));
        }
        return Wire.concat(frames);
    }
}
