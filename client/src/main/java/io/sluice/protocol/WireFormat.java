package io.sluice.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;

import java.util.List;

/**
 * Writes the primitive wire types (see {@link BodyReader} for their layouts) and checks values before a
 * frame is built, so that an encoded frame always decodes.
 */
final class WireFormat {
    /** A string's UTF-8 form is at most this long: its length is a {@code uint16}. */
    static final int MAX_STRING_BYTES = 0xFFFF;
    static final int MAX_UNSIGNED_SHORT = 0xFFFF;
    /** The transaction id no transaction has. */
    static final long NO_TRANSACTION = 0;

    private WireFormat() {
    }

    static String checkString(String field, String value) {
        if (value == null) {
            throw new NullPointerException(field);
        }
        if (value.length() > MAX_STRING_BYTES / 3) {
            int utf8Bytes = ByteBufUtil.utf8Bytes(value);
            if (utf8Bytes > MAX_STRING_BYTES) {
                throw new IllegalArgumentException(field + " is " + utf8Bytes
                        + " UTF-8 bytes, above the limit of " + MAX_STRING_BYTES);
            }
        }
        return value;
    }

    static int checkNonNegative(String field, int value) {
        if (value < 0) {
            throw new IllegalArgumentException(field + " " + value + " is negative");
        }
        return value;
    }

    static long checkNonNegative(String field, long value) {
        if (value < 0) {
            throw new IllegalArgumentException(field + " " + value + " is negative");
        }
        return value;
    }

    static long checkTransactionId(long txnId) {
        if (txnId == NO_TRANSACTION) {
            throw new IllegalArgumentException("txnId 0 names no transaction; transaction ids are never 0");
        }
        return txnId;
    }

    static int checkUnsignedShort(String field, int value) {
        if (value < 0 || value > MAX_UNSIGNED_SHORT) {
            throw new IllegalArgumentException(field + " " + value + " is outside 0.." + MAX_UNSIGNED_SHORT);
        }
        return value;
    }

    static <T> List<T> checkList(String field, List<T> values) {
        if (values == null) {
            throw new NullPointerException(field);
        }
        return List.copyOf(values);
    }

    static void writeString(ByteBuf out, String value) {
        int lengthIndex = out.writerIndex();
        out.writeShort(0);
        int written = ByteBufUtil.writeUtf8(out, value);
        out.setShort(lengthIndex, written);
    }

    static void writeBytes(ByteBuf out, byte[] value) {
        out.writeInt(value.length);
        out.writeBytes(value);
    }

    static void writeRanges(ByteBuf out, List<IdRange> ranges) {
        out.writeInt(ranges.size());
        for (IdRange range : ranges) {
            out.writeLong(range.from());
            out.writeLong(range.to());
        }
    }

    static List<IdRange> readRanges(BodyReader reader) {
        int count = reader.readCount("rangeCount", IdRange.ENCODED_BYTES);
        IdRange[] ranges = new IdRange[count];
        for (int i = 0; i < count; i++) {
            ranges[i] = IdRange.read(reader);
        }
        return List.of(ranges);
    }
}
