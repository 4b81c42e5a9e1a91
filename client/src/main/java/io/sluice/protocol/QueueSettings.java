package io.sluice.protocol;

import io.netty.buffer.ByteBuf;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The typed key/value options of a DECLARE_QUEUE: an ordered map from a string key to an {@code int64},
 * a string or a boolean. Immutable.
 *
 * <pre>
 * uint16 settingCount | settingCount x setting
 *     setting: string key | uint8 valueType | value
 *         valueType 0x01 INT64   : int64
 *         valueType 0x02 STRING  : string
 *         valueType 0x03 BOOLEAN : uint8 (0 = false, 1 = true)
 * </pre>
 *
 * <p>Rule "extensible settings": the codec accepts any key with a known value type, so a newer client's
 * settings always decode. The broker then rejects a key it does not know with INVALID_QUEUE_SETTING rather
 * than ignoring it, because a setting is a guarantee the client asked for. A key may appear only once; an
 * unknown value type is MALFORMED_FRAME since its size cannot be known.
 */
public final class QueueSettings {
    /** INT64 &gt;= 1: deliveries after which a message goes to the dead-letter queue. */
    public static final String MAX_DELIVERIES = "maxDeliveries";
    /** STRING: the queue that receives rejected and over-delivered messages. */
    public static final String DEAD_LETTER_QUEUE = "deadLetterQueue";
    /** INT64 &gt;= 1: unacknowledged deliveries are requeued after this long. */
    public static final String ACK_TIMEOUT_MS = "ackTimeoutMs";
    /** INT64: ready messages at which FLOW turns SLOWED. */
    public static final String QUOTA_SOFT_MESSAGES = "quotaSoftMessages";
    /** INT64: ready messages at which FLOW turns BLOCKED. */
    public static final String QUOTA_HARD_MESSAGES = "quotaHardMessages";
    /** INT64: stored bytes at which FLOW turns SLOWED. */
    public static final String QUOTA_SOFT_BYTES = "quotaSoftBytes";
    /** INT64: stored bytes at which FLOW turns BLOCKED. */
    public static final String QUOTA_HARD_BYTES = "quotaHardBytes";
    /** STRING, {@link #OVERFLOW_BLOCK} or {@link #OVERFLOW_REJECT}: what a hard quota does to publishers. */
    public static final String OVERFLOW_POLICY = "overflowPolicy";
    /** Overflow policy: publishers wait (FLOW BLOCKED; the client holds further publishes and times them out itself). */
    public static final String OVERFLOW_BLOCK = "block";
    /** Overflow policy: publishes fail at once with QUEUE_BLOCKED. */
    public static final String OVERFLOW_REJECT = "reject";

    public static final QueueSettings EMPTY = new QueueSettings(Map.of());

    static final int TYPE_INT64 = 0x01;
    static final int TYPE_STRING = 0x02;
    static final int TYPE_BOOLEAN = 0x03;
    /** A setting needs at least a 2-byte key length, a type byte and a 1-byte boolean. */
    private static final int MIN_SETTING_BYTES = Short.BYTES + 1 + 1;

    private final Map<String, Object> values;

    private QueueSettings(Map<String, Object> values) {
        this.values = values;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Every setting in declaration order; values are {@code Long}, {@code String} or {@code Boolean}. */
    public Map<String, Object> asMap() {
        return values;
    }

    public int size() {
        return values.size();
    }

    public OptionalLong longValue(String key) {
        return values.get(key) instanceof Long value ? OptionalLong.of(value) : OptionalLong.empty();
    }

    public Optional<String> stringValue(String key) {
        return values.get(key) instanceof String value ? Optional.of(value) : Optional.empty();
    }

    public Optional<Boolean> booleanValue(String key) {
        return values.get(key) instanceof Boolean value ? Optional.of(value) : Optional.empty();
    }

    void write(ByteBuf out) {
        out.writeShort(values.size());
        for (Map.Entry<String, Object> entry : values.entrySet()) {
            WireFormat.writeString(out, entry.getKey());
            Object value = entry.getValue();
            if (value instanceof Long number) {
                out.writeByte(TYPE_INT64);
                out.writeLong(number);
            } else if (value instanceof String text) {
                out.writeByte(TYPE_STRING);
                WireFormat.writeString(out, text);
            } else {
                out.writeByte(TYPE_BOOLEAN);
                out.writeByte((Boolean) value ? 1 : 0);
            }
        }
    }

    static QueueSettings read(BodyReader reader) {
        int count = reader.readUnsignedShort("settingCount");
        if ((long) count * MIN_SETTING_BYTES > reader.remaining()) {
            throw reader.malformed("settingCount " + count + " needs at least " + (long) count * MIN_SETTING_BYTES
                    + " bytes but only " + reader.remaining() + " are left in the frame");
        }
        if (count == 0) {
            return EMPTY;
        }
        Map<String, Object> values = new LinkedHashMap<>();
        for (int i = 0; i < count; i++) {
            String key = reader.readString("setting key");
            int type = reader.readUnsignedByte("setting '" + key + "' valueType");
            Object value = switch (type) {
                case TYPE_INT64 -> reader.readLong("setting '" + key + "' value");
                case TYPE_STRING -> reader.readString("setting '" + key + "' value");
                case TYPE_BOOLEAN -> readBoolean(reader, key);
                default -> throw reader.malformed("setting '" + key + "' valueType " + FrameType.hex(type)
                        + " is not one of 0x01 INT64, 0x02 STRING, 0x03 BOOLEAN");
            };
            if (values.putIfAbsent(key, value) != null) {
                throw reader.malformed("setting '" + key + "' appears more than once");
            }
        }
        return new QueueSettings(Collections.unmodifiableMap(values));
    }

    private static Boolean readBoolean(BodyReader reader, String key) {
        int value = reader.readUnsignedByte("setting '" + key + "' value");
        if (value > 1) {
            throw reader.malformed("setting '" + key + "' boolean value " + value + " is neither 0 nor 1");
        }
        return value == 1;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof QueueSettings that && values.equals(that.values);
    }

    @Override
    public int hashCode() {
        return values.hashCode();
    }

    @Override
    public String toString() {
        return "QueueSettings" + values;
    }

    /** Collects settings in order; a later value for the same key replaces the earlier one. */
    public static final class Builder {
        private final Map<String, Object> values = new LinkedHashMap<>();

        private Builder() {
        }

        public Builder set(String key, long value) {
            return put(key, value);
        }

        public Builder set(String key, String value) {
            return put(key, WireFormat.checkString("setting '" + key + "' value", value));
        }

        public Builder set(String key, boolean value) {
            return put(key, value);
        }

        public Builder maxDeliveries(long maxDeliveries) {
            return set(MAX_DELIVERIES, maxDeliveries);
        }

        public Builder deadLetterQueue(String queue) {
            return set(DEAD_LETTER_QUEUE, queue);
        }

        public Builder ackTimeoutMs(long ackTimeoutMs) {
            return set(ACK_TIMEOUT_MS, ackTimeoutMs);
        }

        public Builder quotaMessages(long soft, long hard) {
            return set(QUOTA_SOFT_MESSAGES, soft).set(QUOTA_HARD_MESSAGES, hard);
        }

        public Builder quotaBytes(long soft, long hard) {
            return set(QUOTA_SOFT_BYTES, soft).set(QUOTA_HARD_BYTES, hard);
        }

        public Builder overflowPolicy(String policy) {
            return set(OVERFLOW_POLICY, policy);
        }

        public QueueSettings build() {
            if (values.size() > WireFormat.MAX_UNSIGNED_SHORT) {
                throw new IllegalArgumentException("queue settings count " + values.size()
                        + " is above the limit of " + WireFormat.MAX_UNSIGNED_SHORT);
            }
            return values.isEmpty() ? EMPTY : new QueueSettings(Collections.unmodifiableMap(new LinkedHashMap<>(values)));
        }

        private Builder put(String key, Object value) {
            WireFormat.checkString("setting key", key);
            values.put(key, Objects.requireNonNull(value, key));
            return this;
        }
    }
}
