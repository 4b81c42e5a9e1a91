package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads and writes the header block of a PUBLISH or DELIVER message.
 *
 * <pre>
 * int32 headersLength | headersLength bytes of entries, back to back, filling it exactly:
 *     entry: uint16 keyLength | key UTF-8 | int32 valueLength | value bytes
 * </pre>
 * An empty block is {@code 00 00 00 00}. The block is length-prefixed so a reader that does not need the
 * headers skips them in one step, and the broker can store and forward the block without parsing it.
 */
final class HeaderBlock {
    private HeaderBlock() {
    }

    static void write(ByteBuf out, List<MessageHeader> headers) {
        int lengthIndex = out.writerIndex();
        out.writeInt(0);
        for (MessageHeader header : headers) {
            WireFormat.writeString(out, header.key());
            WireFormat.writeBytes(out, header.value());
        }
        out.setInt(lengthIndex, out.writerIndex() - lengthIndex - Integer.BYTES);
    }

    /** Writes an already encoded block (the entries, without the length) that a cursor handed out. */
    static void writeEncoded(ByteBuf out, ByteBuf encodedEntries) {
        out.writeInt(encodedEntries.readableBytes());
        out.writeBytes(encodedEntries, encodedEntries.readerIndex(), encodedEntries.readableBytes());
    }

    /** Checks a whole block, length prefix included, without creating any object for its entries. */
    static void validate(BodyReader reader) {
        int length = reader.readBytesLength("headers");
        if (length == 0) {
            return; // the common case: no headers, and no sub-reader to create for them
        }
        BodyReader entries = reader.readSubReader(length);
        while (entries.remaining() > 0) {
            entries.skipString("header key");
            entries.skipBytes(entries.readBytesLength("header value"));
        }
    }

    /** Parses the entries of a block that {@link #validate} accepted. */
    static List<MessageHeader> parse(ByteBuf entries) {
        if (!entries.isReadable()) {
            return List.of();
        }
        List<MessageHeader> headers = new ArrayList<>();
        int index = entries.readerIndex();
        int end = entries.writerIndex();
        while (index < end) {
            int keyLength = entries.getUnsignedShort(index);
            String key = entries.toString(index + Short.BYTES, keyLength, StandardCharsets.UTF_8);
            index += Short.BYTES + keyLength;
            int valueLength = entries.getInt(index);
            byte[] value = new byte[valueLength];
            entries.getBytes(index + Integer.BYTES, value);
            index += Integer.BYTES + valueLength;
            headers.add(new MessageHeader(key, value));
        }
        return List.copyOf(headers);
    }
}
