package io.sluice.broker.queue;

import io.sluice.broker.error.BrokerException;
import io.sluice.protocol.ErrorCode;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.flow.QuotaSettings;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.QueueNames;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A queue's broker-side settings: delivery limit, dead-letter queue, ack timeout, redelivery backoff.
 * Built from the broker defaults overlaid with the settings of a DECLARE.
 *
 * @param maxDeliveries        a message delivered this many times without an ack goes to the dead-letter queue
 * @param deadLetterQueue      where such messages go; created on demand
 * @param ackTimeoutMs         a delivery unacknowledged for this long is taken back and redelivered
 * @param redeliveryDelayMs    the first NACK-requeue delay; doubles with every further delivery
 * @param maxRedeliveryDelayMs the cap on that delay
 */
public record QueueOptions(int maxDeliveries, String deadLetterQueue, long ackTimeoutMs, long redeliveryDelayMs,
                           long maxRedeliveryDelayMs, QuotaSettings quota, boolean deadLetterDropped) {

    /** Declare-time setting: dead-letter messages that the drop-oldest policy discards (boolean). */
    public static final String DEAD_LETTER_DROPPED = "deadLetterDropped";

    /**
     * Every setting a DECLARE may carry, sorted by key, with the value type it must have. The codec
     * accepts any type for any key, so a value of the wrong type must be refused here: read with
     * {@code longValue(key)} it would be absent, and the queue would silently get the default.
     */
    static final Map<String, SettingType> KNOWN_KEYS = new TreeMap<>(Map.of(
            QueueSettings.MAX_DELIVERIES, SettingType.WHOLE_NUMBER,
            QueueSettings.DEAD_LETTER_QUEUE, SettingType.QUEUE_NAME,
            QueueSettings.ACK_TIMEOUT_MS, SettingType.WHOLE_NUMBER,
            QueueSettings.QUOTA_SOFT_MESSAGES, SettingType.WHOLE_NUMBER,
            QueueSettings.QUOTA_HARD_MESSAGES, SettingType.WHOLE_NUMBER,
            QueueSettings.QUOTA_SOFT_BYTES, SettingType.WHOLE_NUMBER,
            QueueSettings.QUOTA_HARD_BYTES, SettingType.WHOLE_NUMBER,
            QueueSettings.OVERFLOW_POLICY, SettingType.OVERFLOW_POLICY,
            DEAD_LETTER_DROPPED, SettingType.BOOLEAN));

    /** What a declared setting's value must be, in the words of the refusal. */
    enum SettingType {
        WHOLE_NUMBER(Long.class, "a whole number"),
        BOOLEAN(Boolean.class, "true or false"),
        QUEUE_NAME(String.class, "a string (a queue name)"),
        OVERFLOW_POLICY(String.class, "a string (block, reject or drop-oldest)");

        private final Class<?> valueClass;
        private final String expected;

        SettingType(Class<?> valueClass, String expected) {
            this.valueClass = valueClass;
            this.expected = expected;
        }

        /** Null if {@code value} has this type (and, for a queue name, is one); else the refusal. */
        String refusal(String key, Object value) {
            if (!valueClass.isInstance(value)) {
                return "queue setting " + key + "=" + shown(value) + " is " + typeName(value) + "; expected " + expected;
            }
            if (this == QUEUE_NAME) {
                try {
                    QueueNames.validate((String) value);
                } catch (IllegalArgumentException e) {
                    return "queue setting " + key + "=" + shown(value) + " is not a queue name: " + e.getMessage();
                }
            }
            return null;
        }

        private static String shown(Object value) {
            return value instanceof String text ? "\"" + text + "\"" : String.valueOf(value);
        }

        private static String typeName(Object value) {
            if (value instanceof Long) {
                return "a whole number";
            }
            return value instanceof Boolean ? "a boolean" : "a string";
        }
    }

    public static QueueOptions defaults(String queue, BrokerConfig.Queues defaults) {
        return new QueueOptions(defaults.maxDeliveries, defaultDeadLetterQueue(queue, defaults.deadLetterSuffix), defaults.ackTimeoutMs,
                defaults.redeliveryDelayMs, defaults.maxRedeliveryDelayMs,
                new QuotaSettings(defaults.quotaSoftMessages, defaults.quotaHardMessages, defaults.quotaSoftBytes,
                        defaults.quotaHardBytes, QuotaSettings.OverflowPolicy.parse(defaults.overflowPolicy,
                        "queues.overflow-policy")),
                defaults.deadLetterDropped);
    }

    /**
     * The dead-letter queue a queue gets when it names none: its name and {@code suffix}. When that is longer than a
     * queue name may be (with the default suffix {@code .dlq}, a name of more than 196 characters), the name is cut to leave room for {@code _}, eight hex digits of the whole name's CRC-32 and the suffix:
     * still a queue name, so the move works (it failed at every attempt and the message was delivered again, forever),
     * the same on every call and every node of a cluster, and different for two long names that only end differently.
     * The configuration check keeps the suffix to a queue name's characters and at most
     * {@value io.sluice.broker.config.BrokerConfig#MAX_DEAD_LETTER_SUFFIX} of them.
     */
    static String defaultDeadLetterQueue(String queue, String suffix) {
        if (queue.length() + suffix.length() <= QueueNames.MAX_LENGTH) {
            return queue + suffix;
        }
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update(queue.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        String mark = String.format("_%08x", crc.getValue());
        return queue.substring(0, QueueNames.MAX_LENGTH - mark.length() - suffix.length()) + mark + suffix;
    }

    /**
     * Overlays declared settings on the defaults.
     *
     * @throws BrokerException INVALID_QUEUE_SETTING naming the key, the value and the rule, for an unknown key or bad value
     */
    public static QueueOptions from(String queue, QueueSettings settings, BrokerConfig.Queues defaults) {
        return from(queue, settings, defaults, BrokerConfig.MAX_ACK_TIMEOUT_MS);
    }

    /**
     * The settings a queue was stored with, overlaid on the defaults: as {@link #from}, but an ack timeout above
     * today's bound is kept. Queues declared before that bound existed took any value over 100 ms, and refusing the
     * stored one would start the queue on the defaults of every setting, its dead-letter queue and delivery limit too.
     */
    public static QueueOptions fromStored(String queue, QueueSettings settings, BrokerConfig.Queues defaults) {
        return from(queue, settings, defaults, Long.MAX_VALUE);
    }

    private static QueueOptions from(String queue, QueueSettings settings, BrokerConfig.Queues defaults, long maxAckTimeoutMs) {
        List<String> problems = new ArrayList<>();
        for (Map.Entry<String, Object> e : settings.asMap().entrySet()) {
            SettingType type = KNOWN_KEYS.get(e.getKey());
            String refusal = type == null
                    ? "unknown queue setting '" + e.getKey() + "'; known settings are " + String.join(", ", KNOWN_KEYS.keySet())
                    : type.refusal(e.getKey(), e.getValue());
            if (refusal != null) {
                problems.add(refusal);
            }
        }
        if (!problems.isEmpty()) {
            throw new BrokerException(ErrorCode.INVALID_QUEUE_SETTING, String.join("; ", problems));
        }
        QueueOptions d = defaults(queue, defaults);
        // The configuration's bounds for its defaults, in the configuration's words.
        long maxDeliveries = settings.longValue(QueueSettings.MAX_DELIVERIES).orElse(d.maxDeliveries);
        BrokerConfig.checkRange(problems, QueueSettings.MAX_DELIVERIES, maxDeliveries, BrokerConfig.MIN_MAX_DELIVERIES, BrokerConfig.MAX_MAX_DELIVERIES);
        long ackTimeout = settings.longValue(QueueSettings.ACK_TIMEOUT_MS).orElse(d.ackTimeoutMs);
        BrokerConfig.checkRange(problems, QueueSettings.ACK_TIMEOUT_MS, ackTimeout, BrokerConfig.MIN_ACK_TIMEOUT_MS, maxAckTimeoutMs);
        String dlq = settings.stringValue(QueueSettings.DEAD_LETTER_QUEUE).orElse(d.deadLetterQueue);
        if (dlq.equals(queue)) {
            problems.add(QueueSettings.DEAD_LETTER_QUEUE + " '" + dlq + "' is the queue itself");
        }
        QuotaSettings quota = d.quota;
        try {
            QuotaSettings.OverflowPolicy overflow = QuotaSettings.OverflowPolicy.parse(
                    settings.stringValue(QueueSettings.OVERFLOW_POLICY).orElse(overflowName(d.quota.overflow())),
                    QueueSettings.OVERFLOW_POLICY);
            java.util.Set<QuotaSettings.Setting> declared = java.util.EnumSet.noneOf(QuotaSettings.Setting.class);
            for (QuotaSettings.Setting s : QuotaSettings.Setting.values()) {
                if (settings.asMap().containsKey(s.declareKey())) {
                    declared.add(s);
                }
            }
            quota = new QuotaSettings(
                    settings.longValue(QueueSettings.QUOTA_SOFT_MESSAGES).orElse(d.quota.softMessages()),
                    settings.longValue(QueueSettings.QUOTA_HARD_MESSAGES).orElse(d.quota.hardMessages()),
                    settings.longValue(QueueSettings.QUOTA_SOFT_BYTES).orElse(d.quota.softBytes()),
                    settings.longValue(QueueSettings.QUOTA_HARD_BYTES).orElse(d.quota.hardBytes()),
                    overflow, declared);
        } catch (IllegalArgumentException e) {
            problems.add(e.getMessage());
        }
        boolean deadLetterDropped = settings.booleanValue(DEAD_LETTER_DROPPED).orElse(d.deadLetterDropped);
        if (!problems.isEmpty()) {
            throw new BrokerException(ErrorCode.INVALID_QUEUE_SETTING, String.join("; ", problems));
        }
        return new QueueOptions((int) maxDeliveries, dlq, ackTimeout, d.redeliveryDelayMs, d.maxRedeliveryDelayMs,
                quota, deadLetterDropped);
    }

    /**
     * Every setting a DECLARE may give ({@link #KNOWN_KEYS}), with the value these options hold, under the DECLARE's
     * names and in its formats: the admin API reports these as a queue's settings, so that an operator who copies them
     * into a PUT (on another broker, or for another name) declares a queue that runs the same. The defaults are written
     * out too: a copy declared on a broker configured otherwise does not take that broker's defaults.
     */
    public QueueSettings asSettings() {
        return QueueSettings.builder()
                .maxDeliveries(maxDeliveries)
                .deadLetterQueue(deadLetterQueue)
                .ackTimeoutMs(ackTimeoutMs)
                .quotaMessages(quota.softMessages(), quota.hardMessages())
                .quotaBytes(quota.softBytes(), quota.hardBytes())
                .overflowPolicy(overflowName(quota.overflow()))
                .set(DEAD_LETTER_DROPPED, deadLetterDropped)
                .build();
    }

    private static String overflowName(QuotaSettings.OverflowPolicy policy) {
        return switch (policy) {
            case BLOCK -> "block";
            case REJECT -> "reject";
            case DROP_OLDEST -> "drop-oldest";
        };
    }

    /** Delay before redelivering a NACK-requeued message that has been delivered {@code deliveryCount} times. */
    public long redeliveryDelayMs(int deliveryCount) {
        int doublings = Math.min(Math.max(deliveryCount - 1, 0), 30);
        long delay = redeliveryDelayMs << doublings;
        return delay < 0 ? maxRedeliveryDelayMs : Math.min(delay, maxRedeliveryDelayMs);
    }
}
