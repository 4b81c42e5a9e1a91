package io.sluice.broker.queue;

import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.flow.QuotaSettings;
import io.sluice.protocol.QueueSettings;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

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

    static final Set<String> KNOWN_KEYS = Set.of(QueueSettings.MAX_DELIVERIES, QueueSettings.DEAD_LETTER_QUEUE,
            QueueSettings.ACK_TIMEOUT_MS, QueueSettings.QUOTA_SOFT_MESSAGES, QueueSettings.QUOTA_HARD_MESSAGES,
            QueueSettings.QUOTA_SOFT_BYTES, QueueSettings.QUOTA_HARD_BYTES, QueueSettings.OVERFLOW_POLICY, DEAD_LETTER_DROPPED);

    public static QueueOptions defaults(String queue, BrokerConfig.Queues defaults) {
        return new QueueOptions(defaults.maxDeliveries, queue + defaults.deadLetterSuffix, defaults.ackTimeoutMs,
                defaults.redeliveryDelayMs, defaults.maxRedeliveryDelayMs,
                new QuotaSettings(defaults.quotaSoftMessages, defaults.quotaHardMessages, defaults.quotaSoftBytes,
                        defaults.quotaHardBytes, QuotaSettings.OverflowPolicy.parse(defaults.overflowPolicy)),
                defaults.deadLetterDropped);
    }

    /**
     * Overlays declared settings on the defaults.
     *
     * @throws IllegalArgumentException naming the key, the value and the rule, for an unknown key or bad value
     */
    public static QueueOptions from(String queue, QueueSettings settings, BrokerConfig.Queues defaults) {
        List<String> problems = new ArrayList<>();
        for (Map.Entry<String, Object> e : settings.asMap().entrySet()) {
            if (!KNOWN_KEYS.contains(e.getKey())) {
                problems.add("unknown queue setting '" + e.getKey() + "'; known settings are " + KNOWN_KEYS);
            }
        }
        QueueOptions d = defaults(queue, defaults);
        long maxDeliveries = settings.longValue(QueueSettings.MAX_DELIVERIES).orElse(d.maxDeliveries);
        if (maxDeliveries < 1 || maxDeliveries > 1_000_000) {
            problems.add(QueueSettings.MAX_DELIVERIES + " " + maxDeliveries + " is outside 1..1000000");
        }
        long ackTimeout = settings.longValue(QueueSettings.ACK_TIMEOUT_MS).orElse(d.ackTimeoutMs);
        if (ackTimeout < 100) {
            problems.add(QueueSettings.ACK_TIMEOUT_MS + " " + ackTimeout + " is below the minimum of 100");
        }
        String dlq = settings.stringValue(QueueSettings.DEAD_LETTER_QUEUE).orElse(d.deadLetterQueue);
        if (dlq.equals(queue)) {
            problems.add(QueueSettings.DEAD_LETTER_QUEUE + " '" + dlq + "' is the queue itself");
        }
        QuotaSettings quota = d.quota;
        try {
            QuotaSettings.OverflowPolicy overflow = QuotaSettings.OverflowPolicy.parse(
                    settings.stringValue(QueueSettings.OVERFLOW_POLICY).orElse(overflowName(d.quota.overflow())));
            quota = new QuotaSettings(
                    settings.longValue(QueueSettings.QUOTA_SOFT_MESSAGES).orElse(d.quota.softMessages()),
                    settings.longValue(QueueSettings.QUOTA_HARD_MESSAGES).orElse(d.quota.hardMessages()),
                    settings.longValue(QueueSettings.QUOTA_SOFT_BYTES).orElse(d.quota.softBytes()),
                    settings.longValue(QueueSettings.QUOTA_HARD_BYTES).orElse(d.quota.hardBytes()),
                    overflow);
        } catch (IllegalArgumentException e) {
            problems.add(e.getMessage());
        }
        boolean deadLetterDropped = settings.booleanValue(DEAD_LETTER_DROPPED).orElse(d.deadLetterDropped);
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException(String.join("; ", problems));
        }
        return new QueueOptions((int) maxDeliveries, dlq, ackTimeout, d.redeliveryDelayMs, d.maxRedeliveryDelayMs,
                quota, deadLetterDropped);
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
