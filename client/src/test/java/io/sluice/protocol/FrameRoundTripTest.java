package io.sluice.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.EncoderException;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FrameRoundTripTest {

    @AfterEach
    void noLeaks() {
        LeakCheck.assertNoLeaksOrErrors();
    }

    @Test
    void shouldDecodeEveryFrameTypeToWhatWasEncoded() {
        List<Frame> samples = SampleFrames.all(ByteBufAllocator.DEFAULT);
        try {
            for (Frame sample : samples) {
                List<Frame> decoded = Wire.decode(Wire.encodeRetained(sample));
                try {
                    assertEquals(List.of(sample), decoded, () -> "round trip of " + sample);
                } finally {
                    Wire.release(decoded);
                }
            }
        } finally {
            Wire.release(samples);
        }
    }

    @Test
    void shouldCoverEveryFrameTypeInTheSamples() {
        List<Frame> samples = SampleFrames.all(ByteBufAllocator.DEFAULT);
        Set<FrameType> covered = EnumSet.noneOf(FrameType.class);
        samples.forEach(frame -> covered.add(frame.type()));
        Wire.release(samples);
        assertEquals(EnumSet.allOf(FrameType.class), covered);
    }

    @Test
    void shouldEncodeTheSameBytesThroughThePipelineAndTheStaticEncoder() {
        List<Frame> samples = SampleFrames.all(ByteBufAllocator.DEFAULT);
        try {
            for (Frame sample : samples) {
                ByteBuf direct = FrameEncoder.encode(ByteBufAllocator.DEFAULT, sample, Wire.MAX_FRAME_BYTES);
                try {
                    assertArrayEquals(ByteBufUtil.getBytes(direct), Wire.encodeRetained(sample), sample::toString);
                } finally {
                    direct.release();
                }
            }
        } finally {
            Wire.release(samples);
        }
    }

    @Test
    void shouldEncodeHeartbeatAsSixBytes() {
        assertArrayEquals(new byte[] {0, 0, 0, 2, 3, 0}, Wire.encode(HeartbeatFrame.INSTANCE));
    }

    @Test
    void shouldReadBackEveryPublishedMessageThroughTheCursor() {
        PublishFrame sent = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "orders")
                .add(7, 1, List.of(), "first".getBytes(StandardCharsets.UTF_8))
                .add(7, 2, List.of(MessageHeader.of("k", SampleFrames.UNICODE), MessageHeader.of("k", "")), new byte[0])
                .build();
        PublishFrame received = (PublishFrame) Wire.decode(Wire.encode(sent)).get(0);
        try {
            PublishCursor cursor = received.cursor();
            assertTrue(cursor.next());
            assertEquals(7, cursor.producerId());
            assertEquals(1, cursor.sequence());
            assertEquals(List.of(), cursor.headers());
            assertEquals("first", cursor.payload().toString(StandardCharsets.UTF_8));
            assertTrue(cursor.next());
            assertEquals(2, cursor.sequence());
            assertEquals(List.of(MessageHeader.of("k", SampleFrames.UNICODE), MessageHeader.of("k", "")), cursor.headers());
            assertEquals(0, cursor.payloadLength());
            assertFalse(cursor.next());
            assertFalse(cursor.next());
        } finally {
            received.release();
        }
        assertEquals(0, received.refCnt());
    }

    @Test
    void shouldForwardStoredHeaderBlocksIntoDeliveriesUnchanged() {
        PublishFrame published = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "orders")
                .add(1, 1, List.of(MessageHeader.of("a", "1"), MessageHeader.of("b", "2")), new byte[] {9, 9})
                .build();
        DeliverFrameBuilder builder = new DeliverFrameBuilder(ByteBufAllocator.DEFAULT, 4);
        PublishCursor in = published.cursor();
        while (in.next()) {
            builder.addEncoded(100, 1, in.encodedHeaders(), in.payload());
        }
        published.release();
        DeliverFrame delivered = (DeliverFrame) Wire.decode(Wire.encode(builder.build())).get(0);
        try {
            DeliverCursor out = delivered.cursor();
            assertTrue(out.next());
            assertEquals(100, out.messageId());
            assertEquals(1, out.deliveryCount());
            assertEquals(List.of(MessageHeader.of("a", "1"), MessageHeader.of("b", "2")), out.headers());
            assertArrayEquals(new byte[] {9, 9}, ByteBufUtil.getBytes(out.payload()));
            assertFalse(out.next());
        } finally {
            delivered.release();
        }
    }

    @Test
    void shouldGiveTheSameDeliverBytesFromTheCursorsOffsetsAsFromItsSlices() {
        PublishFrame published = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "orders")
                .add(1, 1, List.of(MessageHeader.of("a", "1")), new byte[] {1, 2, 3})
                .add(1, 2, List.of(), new byte[] {4})
                .add(1, 3, List.of(MessageHeader.of("key", "value"), MessageHeader.of("b", "")), new byte[0])
                .build();
        DeliverFrameBuilder fromSlices = new DeliverFrameBuilder(ByteBufAllocator.DEFAULT, 4);
        DeliverFrameBuilder fromOffsets = new DeliverFrameBuilder(ByteBufAllocator.DEFAULT, 4);
        PublishCursor in = published.cursor();
        java.nio.ByteBuffer whole = in.nioBuffer();
        while (in.next()) {
            fromSlices.addEncoded(100 + in.sequence(), 2, in.encodedHeaders(), in.payload());
            // As the broker's store would hold the message: headers and payload copied into one array.
            byte[] stored = new byte[7 + in.headersLength() + in.payloadLength()];
            whole.get(in.headersOffset(), stored, 3, in.headersLength());
            whole.get(in.payloadOffset(), stored, 3 + in.headersLength() + 2, in.payloadLength());
            fromOffsets.addEncoded(100 + in.sequence(), 2, stored, 3, in.headersLength(),
                    3 + in.headersLength() + 2, in.payloadLength());
        }
        published.release();
        assertArrayEquals(Wire.encode(fromSlices.build()), Wire.encode(fromOffsets.build()));
    }

    @Test
    void shouldNotTakeOwnershipOfPayloadBuffersPassedToBuilders() {
        ByteBuf payload = Unpooled.copiedBuffer("payload", StandardCharsets.UTF_8);
        PublishFrame frame = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "q").add(1, 1, List.of(), payload).build();
        assertEquals(1, payload.refCnt());
        assertEquals(0, payload.readerIndex());
        frame.release();
        payload.release();
    }

    @Test
    void shouldReleaseTheBufferOfADiscardedBuilder() {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "q").add(1, 1, List.of(), new byte[10]);
        assertEquals(1, builder.messageCount());
        builder.discard();
        assertThrows(IllegalStateException.class, builder::build);
        builder.discard();
    }

    @Test
    void shouldRefuseToSendAFrameLargerThanMaxFrameBytes() {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameEncoder(100));
        PublishFrame frame = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "q").add(1, 1, List.of(), new byte[100]).build();
        EncoderException failure = assertThrows(EncoderException.class, () -> channel.writeOutbound(frame));
        ProtocolException cause = assertInstanceOf(ProtocolException.class, failure.getCause());
        assertEquals(ErrorCode.FRAME_TOO_LARGE, cause.errorCode());
        assertEquals("PUBLISH frame length 133 exceeds maxFrameBytes 100", cause.getMessage());
        assertEquals(0, frame.refCnt());
        assertFalse(channel.finishAndReleaseAll());
    }

    @Test
    void shouldShareOneBufferAndReferenceCountBetweenATransactionalPublishAndItsPublish() {
        PublishFrame publish = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "invoices")
                .add(0, 0, List.of(), new byte[] {1, 2})
                .build();
        TxPublishFrame sent = new TxPublishFrame(9, publish);
        TxPublishFrame received = (TxPublishFrame) Wire.decode(Wire.encode(sent)).get(0);
        assertEquals(0, publish.refCnt());
        try {
            assertEquals(9, received.txnId());
            assertEquals("invoices", received.publish().queue());
            PublishCursor cursor = received.publish().cursor();
            assertTrue(cursor.next());
            assertArrayEquals(new byte[] {1, 2}, ByteBufUtil.getBytes(cursor.payload()));
            assertFalse(cursor.next());
            received.publish().retain();
            assertEquals(2, received.refCnt());
            received.publish().release();
        } finally {
            received.release();
        }
        assertEquals(0, received.publish().refCnt());
    }

    @Test
    void shouldRejectTransactionIdZeroWhenBuilt() {
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> new TxBeginFrame(0, 0));
        assertEquals("txnId 0 names no transaction; transaction ids are never 0", zero.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new TxBeginFrame(1, -1));
        assertThrows(IllegalArgumentException.class, () -> new TxAckFrame(0, 1, List.of()));
        assertThrows(IllegalArgumentException.class, () -> new TxCommitFrame(1, 0));
        assertThrows(IllegalArgumentException.class, () -> new TxRollbackFrame(1, 0));
        assertThrows(IllegalArgumentException.class, () -> new TxAbortedFrame(0, ErrorCode.TRANSACTION_LIMIT, ""));
        PublishFrame publish = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, "q").build();
        assertThrows(IllegalArgumentException.class, () -> new TxPublishFrame(0, publish));
        assertEquals(1, publish.refCnt());
        publish.release();
    }

    @Test
    void shouldRejectStringsLongerThan65535Utf8BytesWhenBuilt() {
        IllegalArgumentException tooLong = assertThrows(IllegalArgumentException.class,
                () -> new DeleteQueueFrame(1, SampleFrames.MAX_STRING + "a"));
        assertEquals("queue is 65536 UTF-8 bytes, above the limit of 65535", tooLong.getMessage());
    }

    @Test
    void shouldRejectValuesTheWireCannotCarryWhenBuilt() {
        assertThrows(IllegalArgumentException.class, () -> new IdRange(5, 4));
        assertThrows(IllegalArgumentException.class, () -> new CreditFrame(1, -1));
        assertThrows(IllegalArgumentException.class, () -> new NackFrame(1, NackAction.REQUEUE, 5, List.of()));
        assertThrows(IllegalArgumentException.class, () -> new CloseFrame(70_000, ""));
        DeliverFrameBuilder builder = new DeliverFrameBuilder(ByteBufAllocator.DEFAULT, 1);
        assertThrows(IllegalArgumentException.class, () -> builder.add(1, 0, List.of(), new byte[0]));
        builder.discard();
    }

    @Test
    void shouldReadUnknownErrorCodesAsUnknownButKeepTheNumber() {
        ErrorFrame frame = (ErrorFrame) Wire.decode(Wire.encode(new ErrorFrame(1, 4242, "from the future"))).get(0);
        assertEquals(4242, frame.code());
        assertEquals(ErrorCode.UNKNOWN, frame.errorCode());
        assertEquals(ErrorCode.QUEUE_BLOCKED,
                new PublishErrorFrame(1, IdRange.single(1), ErrorCode.QUEUE_BLOCKED, "").errorCode());
        TxAbortedFrame aborted = (TxAbortedFrame) Wire.decode(Wire.encode(new TxAbortedFrame(3, 4242, "later"))).get(0);
        assertEquals(4242, aborted.code());
        assertEquals(ErrorCode.UNKNOWN, aborted.errorCode());
    }

    @Test
    void shouldKeepQueueSettingsTypedAndOrdered() {
        QueueSettings settings = QueueSettings.builder().maxDeliveries(3).deadLetterQueue("dlq").set("flag", true).build();
        DeclareQueueFrame frame = (DeclareQueueFrame) Wire.decode(Wire.encode(new DeclareQueueFrame(1, "q", settings))).get(0);
        assertEquals(List.of("maxDeliveries", "deadLetterQueue", "flag"), List.copyOf(frame.settings().asMap().keySet()));
        assertEquals(3, frame.settings().longValue(QueueSettings.MAX_DELIVERIES).getAsLong());
        assertEquals("dlq", frame.settings().stringValue(QueueSettings.DEAD_LETTER_QUEUE).orElseThrow());
        assertEquals(true, frame.settings().booleanValue("flag").orElseThrow());
        assertTrue(frame.settings().longValue(QueueSettings.DEAD_LETTER_QUEUE).isEmpty());
        ReferenceCountUtil.release(frame);
    }
}
