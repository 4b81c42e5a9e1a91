package io.sluice.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.util.ByteProcessor;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Reads the primitive wire types from one frame body and checks every length against the bytes left
 * before it reads or allocates anything.
 *
 * <p>Primitive layouts:
 * <pre>
 * string : uint16 length | length bytes of UTF-8 (strictly valid)
 * bytes  : int32 length (0..remaining) | length bytes
 * count  : int32 (0..remaining / smallest element size)
 * </pre>
 * Every failure is a {@link ProtocolException} with MALFORMED_FRAME whose message names the frame type, the
 * field, the value and the limit. Not thread-safe; one instance reads one body once.
 */
final class BodyReader {
    /** Goes on while a byte is ASCII (0x00-0x7f); {@code forEachByte} answers -1 if every byte was. */
    private static final ByteProcessor UNTIL_NON_ASCII = b -> b >= 0;

    private final FrameType type;
    private final ByteBuf body;

    /**
     * @param body a view bounded to exactly this frame's body; reading moves its reader index
     */
    BodyReader(FrameType type, ByteBuf body) {
        this.type = type;
        this.body = body;
    }

    FrameType type() {
        return type;
    }

    int remaining() {
        return body.readableBytes();
    }

    int readerIndex() {
        return body.readerIndex();
    }

    int readUnsignedByte(String field) {
        require(field, Byte.BYTES);
        return body.readUnsignedByte();
    }

    int readUnsignedShort(String field) {
        require(field, Short.BYTES);
        return body.readUnsignedShort();
    }

    int readInt(String field) {
        require(field, Integer.BYTES);
        return body.readInt();
    }

    int readNonNegativeInt(String field) {
        int value = readInt(field);
        if (value < 0) {
            throw malformed(field + " " + value + " is negative");
        }
        return value;
    }

    long readLong(String field) {
        require(field, Long.BYTES);
        return body.readLong();
    }

    long readNonNegativeLong(String field) {
        long value = readLong(field);
        if (value < 0) {
            throw malformed(field + " " + value + " is negative");
        }
        return value;
    }

    /** Reads a transaction id; 0 names no transaction (see {@link TxBeginFrame}). */
    long readTransactionId() {
        long txnId = readLong("txnId");
        if (txnId == WireFormat.NO_TRANSACTION) {
            throw malformed("txnId 0 names no transaction; transaction ids are never 0");
        }
        return txnId;
    }

    String readString(String field) {
        int length = readStringLength(field);
        if (length == 0) {
            return "";
        }
        int start = body.readerIndex();
        if (body.forEachByte(start, length, UNTIL_NON_ASCII) < 0) {
            // Only ASCII (every byte below 0x80), which is always valid UTF-8 and decodes byte for byte: queue
            // names, as a rule, read on every PUBLISH without a decoder, a char buffer and an NIO view.
            String value = body.toString(start, length, StandardCharsets.US_ASCII);
            body.skipBytes(length);
            return value;
        }
        ByteBuffer bytes = body.nioBuffer(start, length);
        try {
            String value = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(bytes)
                    .toString();
            body.skipBytes(length);
            return value;
        } catch (CharacterCodingException e) {
            throw malformed(field + " is not valid UTF-8");
        }
    }

    /** Checks a string like {@link #readString}, for header keys the decoder need not turn into objects yet. */
    void skipString(String field) {
        readString(field);
    }

    /** Reads an {@code int32} byte-array length, checks it fits, and returns it; the bytes stay unread. */
    int readBytesLength(String field) {
        int length = readNonNegativeInt(field + " length");
        if (length > body.readableBytes()) {
            throw malformed(field + " length " + length + " exceeds the " + body.readableBytes()
                    + " bytes left in the frame");
        }
        return length;
    }

    byte[] readByteArray(String field) {
        byte[] bytes = new byte[readBytesLength(field)];
        body.readBytes(bytes);
        return bytes;
    }

    /**
     * Reads an element count and rejects one that could not fit: each element needs at least
     * {@code minBytesEach} bytes, so a count above {@code remaining / minBytesEach} is a lie.
     */
    int readCount(String field, int minBytesEach) {
        int count = readNonNegativeInt(field);
        long needed = (long) count * minBytesEach;
        if (needed > body.readableBytes()) {
            throw malformed(field + " " + count + " needs at least " + needed + " bytes but only "
                    + body.readableBytes() + " are left in the frame");
        }
        return count;
    }

    void skipBytes(int length) {
        body.skipBytes(length);
    }

    /** A bounded, non-retained view of the next {@code length} bytes, which are consumed. */
    BodyReader readSubReader(int length) {
        return new BodyReader(type, body.readSlice(length));
    }

    /** A retained slice from {@code fromIndex} up to the current reader index. */
    ByteBuf retainedSliceFrom(int fromIndex) {
        return body.retainedSlice(fromIndex, body.readerIndex() - fromIndex);
    }

    void requireFullyRead() {
        if (body.isReadable()) {
            throw malformed("body has " + body.readableBytes() + " trailing bytes after its last field");
        }
    }

    ProtocolException malformed(String problem) {
        return new ProtocolException(ErrorCode.MALFORMED_FRAME, type + " " + problem);
    }

    private int readStringLength(String field) {
        int length = readUnsignedShort(field + " length");
        if (length > body.readableBytes()) {
            throw malformed(field + " length " + length + " exceeds the " + body.readableBytes()
                    + " bytes left in the frame");
        }
        return length;
    }

    private void require(String field, int bytes) {
        if (body.readableBytes() < bytes) {
            throw malformed(field + " needs " + bytes + " bytes but only " + body.readableBytes()
                    + " are left in the frame");
        }
    }
}
