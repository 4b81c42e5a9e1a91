package io.sluice.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FrameDecoderTest {
    private static final int TYPE_PUBLISH = FrameType.PUBLISH.code();
    private static final int TYPE_DELIVER = FrameType.DELIVER.code();
    /** Frames up to this size are cut at every byte; longer ones (65535-byte strings) at as many points. */
    private static final int EVERY_BYTE_UP_TO = 2048;

    @AfterEach
    void noLeaks() {
        LeakCheck.assertNoLeaksOrErrors();
    }

    @Test
    void shouldRejectAnOversizedLengthBeforeTheBodyArrives() {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(1024));
        ProtocolException error = assertThrows(ProtocolException.class,
                () -> channel.writeInbound(register(Unpooled.buffer().writeInt(1025))));
        assertEquals(ErrorCode.FRAME_TOO_LARGE, error.errorCode());
        assertEquals("frame length 1025 exceeds maxFrameBytes 1024", error.getMessage());
        assertFalse(channel.finishAndReleaseAll());
    }

    @Test
    void shouldAcceptAFrameOfExactlyMaxFrameBytes() {
        byte[] frame = Wire.frame(FrameType.CLOSE.code(), 0, body -> body.writeShort(0).writeShort(4).writeBytes(new byte[4]));
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(frame.length - 4));
        channel.writeInbound(register(Unpooled.wrappedBuffer(frame)));
        assertEquals(new CloseFrame(0, "\0\0\0\0"), channel.readInbound());
        assertFalse(channel.finishAndReleaseAll());
    }

    @Test
    void shouldRejectNegativeAndShortLengths() {
        assertRejected(ErrorCode.MALFORMED_FRAME, "frame length -1 is negative", new byte[] {-1, -1, -1, -1});
        assertRejected(ErrorCode.MALFORMED_FRAME, "frame length -2147483648 is negative", new byte[] {-128, 0, 0, 0});
        assertRejected(ErrorCode.MALFORMED_FRAME,
                "frame length 0 is below the minimum of 2 (frame type and flags)", new byte[] {0, 0, 0, 0});
        assertRejected(ErrorCode.MALFORMED_FRAME,
                "frame length 1 is below the minimum of 2 (frame type and flags)", new byte[] {0, 0, 0, 1, 3});
    }

    @Test
    void shouldRejectUnknownMandatoryFrameTypesAtOnce() {
        assertRejected(ErrorCode.UNKNOWN_FRAME_TYPE,
                "frame type 0x7F is unknown and below 0x80, the first optional type, so it cannot be skipped",
                new byte[] {0, 0, 0, 100, 0x7F});
        assertRejected(ErrorCode.UNKNOWN_FRAME_TYPE, null, new byte[] {0, 0, 0, 2, 0x00, 0});
    }

    @Test
    void shouldSkipUnknownOptionalFramesAndDecodeWhatFollows() {
        byte[] optional = Wire.frame(0x80, 0xFF, body -> body.writeBytes(new byte[50]));
        byte[] heartbeat = Wire.encode(HeartbeatFrame.INSTANCE);
        assertEquals(List.of(HeartbeatFrame.INSTANCE), Wire.decode(Wire.concat(List.of(optional, heartbeat))));
    }

    @Test
    void shouldRejectFlagBitsTheTypeDoesNotDefine() {
        assertRejected(ErrorCode.MALFORMED_FRAME, "HEARTBEAT flags 0x01 set bits outside the defined mask 0x00",
                Wire.frame(FrameType.HEARTBEAT.code(), 0x01, body -> { }));
        assertRejected(ErrorCode.MALFORMED_FRAME, "DECLARE_QUEUE flags 0x03 set bits outside the defined mask 0x01",
                Wire.frame(FrameType.DECLARE_QUEUE.code(), 0x03, body -> { }));
        assertRejected(ErrorCode.MALFORMED_FRAME, "OK flags 0x80 set bits outside the defined mask 0x01",
                Wire.frame(FrameType.OK.code(), 0x80, body -> body.writeLong(1)));
    }

    @Test
    void shouldTakeHellosFlagsAsCapabilitiesKnownOrNotAndHelloOksOnlyAsKnownOnes() {
        byte[] hello = Wire.frame(FrameType.HELLO.code(), 0x81, body -> body.writeShort(1).writeShort(1)
                .writeShort(1).writeByte('c').writeInt(0).writeInt(0).writeShort(0).writeShort(0));
        assertEquals(List.of(new HelloFrame(1, 1, "c", 0, 0, "", "", 0x81)), Wire.decode(hello),
                "a capability this codec does not know is no reason to refuse a HELLO");
        assertEquals(Arrays.toString(hello), Arrays.toString(Wire.encode(new HelloFrame(1, 1, "c", 0, 0, "", "", 0x81))),
                "encoded byte for byte: the capabilities in the flags byte");
        assertEquals("00000015010100010001000174000000000000000000000000", io.netty.buffer.ByteBufUtil.hexDump(
                Wire.encode(new HelloFrame(1, 1, "t", 0, 0, "", "", HelloFrame.CAPABILITY_TRANSACTIONS))),
                "the example of docs/protocol.md, \"Capabilities\"");
        byte[] helloOk = Wire.frame(FrameType.HELLO_OK.code(), 0x01, body -> body.writeShort(1).writeInt(1024).writeInt(0)
                .writeShort(1).writeByte('b').writeInt(1).writeLong(1024));
        assertEquals(List.of(new HelloOkFrame(1, 1024, 0, "b", 1, 1024, HelloFrame.CAPABILITY_TRANSACTIONS)), Wire.decode(helloOk));
        assertTrue(((HelloOkFrame) Wire.decode(helloOk).get(0)).grantsTransactions());
        byte[] countsHeaders = Wire.frame(FrameType.HELLO_OK.code(), 0x02, body -> body.writeShort(1).writeInt(1024).writeInt(0)
                .writeShort(1).writeByte('b').writeInt(1).writeLong(1024));
        assertTrue(((HelloOkFrame) Wire.decode(countsHeaders).get(0)).grantsWindowCountsHeaders());
        assertRejected(ErrorCode.MALFORMED_FRAME, "HELLO_OK flags 0x04 set bits outside the defined mask 0x03",
                Wire.frame(FrameType.HELLO_OK.code(), 0x04, body -> { }));
    }

    @Test
    void shouldWaitAtEveryTruncationPointThenDecodeWhenTheRestArrives() {
        for (Frame sample : SampleFrames.all(ByteBufAllocator.DEFAULT)) {
            byte[] bytes = Wire.encodeRetained(sample);
            int step = bytes.length <= EVERY_BYTE_UP_TO ? 1 : bytes.length / EVERY_BYTE_UP_TO + 1;
            for (int cut = 0; cut <= bytes.length; cut = cut == bytes.length ? cut + 1 : Math.min(cut + step, bytes.length)) {
                EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(Wire.MAX_FRAME_BYTES));
                channel.writeInbound(register(Unpooled.buffer(cut).writeBytes(bytes, 0, cut)));
                if (cut < bytes.length) {
                    assertNull(channel.readInbound(), "decoded a frame from " + cut + " of " + bytes.length + " bytes");
                    channel.writeInbound(register(Unpooled.copiedBuffer(bytes, cut, bytes.length - cut)));
                }
                Frame decoded = channel.readInbound();
                try {
                    assertEquals(sample, decoded, "split at " + cut);
                } finally {
                    ReferenceCountUtil.release(decoded);
                }
                assertFalse(channel.finishAndReleaseAll());
            }
            ReferenceCountUtil.release(sample);
        }
    }

    @Test
    void shouldRejectAConnectionClosedInTheMiddleOfAFrame() {
        byte[] bytes = Wire.encode(new DeleteQueueFrame(1, "orders"));
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(Wire.MAX_FRAME_BYTES));
        channel.writeInbound(register(Unpooled.copiedBuffer(bytes, 0, bytes.length - 1)));
        ProtocolException error = assertThrows(ProtocolException.class, channel::finish);
        assertEquals(ErrorCode.MALFORMED_FRAME, error.errorCode());
        assertEquals("connection closed with " + (bytes.length - 1) + " bytes of an incomplete frame", error.getMessage());
    }

    @Test
    void shouldDiscardEverythingAfterTheFirstBadFrame() {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(Wire.MAX_FRAME_BYTES));
        assertThrows(ProtocolException.class, () -> channel.writeInbound(register(Unpooled.wrappedBuffer(
                Wire.frame(0x7E, 0, body -> { })))));
        channel.writeInbound(register(Unpooled.wrappedBuffer(Wire.encode(HeartbeatFrame.INSTANCE))));
        assertNull(channel.readInbound());
        assertFalse(channel.finishAndReleaseAll());
    }

    @Test
    void shouldRejectAStringLongerThanTheRestOfTheFrame() {
        assertRejected(ErrorCode.MALFORMED_FRAME, "DELETE_QUEUE queue length 100 exceeds the 3 bytes left in the frame",
                Wire.frame(FrameType.DELETE_QUEUE.code(), 0, body -> body.writeLong(1).writeShort(100).writeBytes(new byte[3])));
    }

    @Test
    void shouldRejectAFieldCutShortByTheFrameLength() {
        assertRejected(ErrorCode.MALFORMED_FRAME, "HELLO minVersion needs 2 bytes but only 1 are left in the frame",
                Wire.frame(FrameType.HELLO.code(), 0, body -> body.writeByte(1)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "UNSUBSCRIBE consumerTag needs 4 bytes but only 0 are left in the frame",
                Wire.frame(FrameType.UNSUBSCRIBE.code(), 0, body -> body.writeLong(1)));
    }

    @Test
    void shouldRejectInvalidUtf8() {
        assertRejected(ErrorCode.MALFORMED_FRAME, "PURGE_QUEUE queue is not valid UTF-8",
                Wire.frame(FrameType.PURGE_QUEUE.code(), 0, body -> body.writeLong(1).writeShort(2).writeByte(0xC3).writeByte(0x28)));
    }

    @Test
    void shouldRejectTrailingBytes() {
        assertRejected(ErrorCode.MALFORMED_FRAME, "HEARTBEAT body has 1 trailing bytes after its last field",
                Wire.frame(FrameType.HEARTBEAT.code(), 0, body -> body.writeByte(0)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "PUBLISH body has 2 trailing bytes after its last field",
                publish(0, body -> body.writeShort(0)));
    }

    @Test
    void shouldRejectANegativeBatchCount() {
        assertRejected(ErrorCode.MALFORMED_FRAME, "PUBLISH messageCount -1 is negative", publish(-1, body -> { }));
        assertRejected(ErrorCode.MALFORMED_FRAME, "DELIVER messageCount -5 is negative",
                Wire.frame(TYPE_DELIVER, 0, body -> body.writeInt(1).writeInt(-5)));
    }

    @Test
    void shouldRejectABatchCountThatCannotFitInTheFrame() {
        assertRejected(ErrorCode.MALFORMED_FRAME,
                "PUBLISH messageCount 2 needs at least 48 bytes but only 47 are left in the frame",
                publish(2, body -> body.writeBytes(new byte[47])));
        assertRejected(ErrorCode.MALFORMED_FRAME,
                "DELIVER messageCount 2147483647 needs at least 42949672940 bytes but only 0 are left in the frame",
                Wire.frame(TYPE_DELIVER, 0, body -> body.writeInt(1).writeInt(Integer.MAX_VALUE)));
        assertRejected(ErrorCode.MALFORMED_FRAME,
                "ACK rangeCount 1 needs at least 16 bytes but only 8 are left in the frame",
                Wire.frame(FrameType.ACK.code(), 0, body -> body.writeInt(1).writeInt(1).writeLong(1)));
    }

    @Test
    void shouldRejectBadLengthsInsideBatchMessages() {
        assertRejected(ErrorCode.MALFORMED_FRAME, "PUBLISH message payload length 5 exceeds the 4 bytes left in the frame",
                publish(1, body -> body.writeLong(1).writeLong(1).writeInt(0).writeInt(5).writeInt(0)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "PUBLISH message payload length -3 is negative",
                publish(1, body -> body.writeLong(1).writeLong(1).writeInt(0).writeInt(-3)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "PUBLISH headers length 9 exceeds the 4 bytes left in the frame",
                publish(1, body -> body.writeLong(1).writeLong(1).writeInt(9).writeInt(0)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "PUBLISH header key length 7 exceeds the 1 bytes left in the frame",
                publish(1, body -> body.writeLong(1).writeLong(1).writeInt(3).writeShort(7).writeByte('k').writeInt(0)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "DELIVER message deliveryCount 0 is below the minimum of 1",
                Wire.frame(TYPE_DELIVER, 0, body -> body.writeInt(1).writeInt(1).writeLong(1).writeInt(0).writeInt(0).writeInt(0)));
    }

    @Test
    void shouldRejectBadEnumValuesRangesAndSettings() {
        assertRejected(ErrorCode.MALFORMED_FRAME, "FLOW state 3 is not one of 0 FREE, 1 SLOWED, 2 BLOCKED",
                Wire.frame(FrameType.FLOW.code(), 0, body -> body.writeShort(0).writeByte(3).writeShort(0)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "NACK delayMs 5 must be 0 for action REQUEUE",
                Wire.frame(FrameType.NACK.code(), 0, body -> body.writeInt(1).writeByte(0).writeLong(5).writeInt(0)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "CONFIRM range from 9 is after range to 8",
                Wire.frame(FrameType.CONFIRM.code(), 0, body -> body.writeLong(1).writeInt(1).writeLong(9).writeLong(8)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "DECLARE_QUEUE setting 'k' appears more than once",
                Wire.frame(FrameType.DECLARE_QUEUE.code(), 0, body -> {
                    body.writeLong(1).writeShort(1).writeByte('q').writeShort(2);
                    body.writeShort(1).writeByte('k').writeByte(3).writeByte(1);
                    body.writeShort(1).writeByte('k').writeByte(3).writeByte(0);
                }));
        assertRejected(ErrorCode.MALFORMED_FRAME,
                "DECLARE_QUEUE setting 'k' valueType 0x09 is not one of 0x01 INT64, 0x02 STRING, 0x03 BOOLEAN",
                Wire.frame(FrameType.DECLARE_QUEUE.code(), 0, body ->
                        body.writeLong(1).writeShort(1).writeByte('q').writeShort(1).writeShort(1).writeByte('k').writeByte(9).writeByte(0)));
    }

    /** docs/protocol.md: PRODUCER_OK's {@code int32 epoch (>= 1)}; 0 and negative epochs are refused. */
    @Test
    void shouldRejectAProducerOkEpochBelowOne() {
        for (int epoch : new int[] {0, -1, Integer.MIN_VALUE}) {
            assertRejected(ErrorCode.MALFORMED_FRAME, "PRODUCER_OK epoch " + epoch + " is below the minimum of 1",
                    Wire.frame(FrameType.PRODUCER_OK.code(), 0,
                            body -> body.writeLong(7).writeLong(42).writeInt(epoch).writeLong(0)));
            assertThrows(IllegalArgumentException.class, () -> new ProducerOkFrame(7, 42, epoch, 0));
        }
        assertEquals(new ProducerOkFrame(7, 42, 1, 0), Wire.decode(Wire.frame(FrameType.PRODUCER_OK.code(), 0,
                body -> body.writeLong(7).writeLong(42).writeInt(1).writeLong(0))).get(0));
    }

    @Test
    void shouldRejectTransactionIdZeroAndANegativeTimeout() {
        assertRejected(ErrorCode.MALFORMED_FRAME, "TX_BEGIN txnId 0 names no transaction; transaction ids are never 0",
                Wire.frame(FrameType.TX_BEGIN.code(), 0, body -> body.writeLong(0).writeInt(0)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "TX_BEGIN timeoutMs -1 is negative",
                Wire.frame(FrameType.TX_BEGIN.code(), 0, body -> body.writeLong(1).writeInt(-1)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "TX_PUBLISH txnId 0 names no transaction; transaction ids are never 0",
                Wire.frame(FrameType.TX_PUBLISH.code(), 0, body -> body.writeLong(0).writeShort(1).writeByte('q').writeInt(0)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "TX_ACK txnId 0 names no transaction; transaction ids are never 0",
                Wire.frame(FrameType.TX_ACK.code(), 0, body -> body.writeLong(0).writeInt(1).writeInt(0)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "TX_COMMIT txnId 0 names no transaction; transaction ids are never 0",
                Wire.frame(FrameType.TX_COMMIT.code(), 0, body -> body.writeLong(1).writeLong(0)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "TX_ROLLBACK txnId 0 names no transaction; transaction ids are never 0",
                Wire.frame(FrameType.TX_ROLLBACK.code(), 0, body -> body.writeLong(1).writeLong(0)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "TX_ABORTED txnId 0 names no transaction; transaction ids are never 0",
                Wire.frame(FrameType.TX_ABORTED.code(), 0, body -> body.writeLong(0).writeShort(603).writeShort(0)));
    }

    @Test
    void shouldCheckTheEmbeddedPublishAndAckBodiesOfTransactionFrames() {
        assertRejected(ErrorCode.MALFORMED_FRAME,
                "TX_PUBLISH messageCount 2 needs at least 48 bytes but only 47 are left in the frame",
                Wire.frame(FrameType.TX_PUBLISH.code(), 0,
                        body -> body.writeLong(1).writeShort(1).writeByte('q').writeInt(2).writeBytes(new byte[47])));
        assertRejected(ErrorCode.MALFORMED_FRAME, "TX_PUBLISH message payload length -3 is negative",
                Wire.frame(FrameType.TX_PUBLISH.code(), 0, body -> body.writeLong(1).writeShort(1).writeByte('q')
                        .writeInt(1).writeLong(0).writeLong(0).writeInt(0).writeInt(-3)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "TX_PUBLISH body has 2 trailing bytes after its last field",
                Wire.frame(FrameType.TX_PUBLISH.code(), 0,
                        body -> body.writeLong(1).writeShort(1).writeByte('q').writeInt(0).writeShort(0)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "TX_ACK range from 9 is after range to 8",
                Wire.frame(FrameType.TX_ACK.code(), 0, body -> body.writeLong(1).writeInt(1).writeInt(1).writeLong(9).writeLong(8)));
        assertRejected(ErrorCode.MALFORMED_FRAME, "TX_COMMIT txnId needs 8 bytes but only 4 are left in the frame",
                Wire.frame(FrameType.TX_COMMIT.code(), 0, body -> body.writeLong(1).writeInt(7)));
    }

    @Test
    void shouldDecodeUnknownSettingKeysForTheBrokerToJudge() {
        byte[] frame = Wire.frame(FrameType.DECLARE_QUEUE.code(), 0, body ->
                body.writeLong(1).writeShort(1).writeByte('q').writeShort(1)
                        .writeShort(6).writeBytes("future".getBytes(StandardCharsets.UTF_8)).writeByte(1).writeLong(7));
        DeclareQueueFrame decoded = (DeclareQueueFrame) Wire.decode(frame).get(0);
        assertEquals(7, decoded.settings().longValue("future").getAsLong());
    }

    private static byte[] publish(int count, Consumer<ByteBuf> messages) {
        return Wire.frame(TYPE_PUBLISH, 0, body -> {
            body.writeShort(1).writeByte('q').writeInt(count);
            messages.accept(body);
        });
    }

    private static ByteBuf register(ByteBuf buffer) {
        LeakCheck.register(buffer);
        return buffer;
    }

    /** Feeds {@code bytes} in one piece and expects the decoder to reject them. */
    private static void assertRejected(ErrorCode code, String message, byte[] bytes) {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(Wire.MAX_FRAME_BYTES));
        ProtocolException error = assertThrows(ProtocolException.class,
                () -> channel.writeInbound(register(Unpooled.copiedBuffer(bytes))), () -> Arrays.toString(bytes));
        assertEquals(code, error.errorCode(), error.getMessage());
        if (message != null) {
            assertEquals(message, error.getMessage());
        }
        assertFalse(channel.finishAndReleaseAll());
    }
}
