package io.sluice.protocol;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * One application header of a published or delivered message: a string key and an opaque byte value.
 * Keys need not be unique; order is preserved end to end.
 */
public record MessageHeader(String key, byte[] value) {
    public MessageHeader {
        WireFormat.checkString("header key", key);
        if (value == null) {
            throw new NullPointerException("header value");
        }
    }

    public static MessageHeader of(String key, String value) {
        return new MessageHeader(key, value.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public byte[] value() {
        return value.clone();
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof MessageHeader that && key.equals(that.key) && Arrays.equals(value, that.value);
    }

    @Override
    public int hashCode() {
        return 31 * key.hashCode() + Arrays.hashCode(value);
    }

    @Override
    public String toString() {
        return "MessageHeader[" + key + "=" + value.length + " bytes]";
    }
}
