package io.sluice.broker.flow;

import com.fasterxml.jackson.annotation.JsonIgnore;
import io.sluice.protocol.QueueSettings;

import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * A queue's backlog quotas. Backlog = messages stored and not yet acknowledged. A level of 0 means
 * "no limit".
 *
 * <ul>
 *   <li>below {@code soft}: producers run free;</li>
 *   <li>from {@code soft} to {@code hard}: producers are slowed to the consumers' pace;</li>
 *   <li>at {@code hard}: the overflow policy applies (block, reject or drop-oldest);</li>
 *   <li>a blocked queue resumes once the backlog is below {@code resume}, and a slowed one runs
 *       free again below {@code freeBelow} (hysteresis, so producers do not flap).</li>
 * </ul>
 *
 * @param softMessages soft level in messages
 * @param hardMessages hard level in messages
 * @param softBytes    soft level in bytes
 * @param hardBytes    hard level in bytes
 * @param overflow     what happens at the hard level
 * @param declared     the settings the queue's DECLARE gave; the others are the configuration's defaults for every queue.
 *                     Only for the sentences that name a setting ({@link #key}): not shown in the admin API's figures.
 */
public record QuotaSettings(long softMessages, long hardMessages, long softBytes, long hardBytes, OverflowPolicy overflow,
                            @JsonIgnore Set<Setting> declared) {
    /** Below this share of a hard level a blocked queue resumes. */
    static final double RESUME_RATIO = 0.9;
    /** Below this share of a soft level a slowed queue runs free again. */
    static final double FREE_RATIO = 0.9;

    public static final QuotaSettings NONE = new QuotaSettings(0, 0, 0, 0, OverflowPolicy.BLOCK);

    /**
     * A setting of the quota, by the two keys that may hold it: a DECLARE's (and the admin API's) for one queue, and the
     * configuration's default for every queue that declares none.
     */
    public enum Setting {
        SOFT_MESSAGES(QueueSettings.QUOTA_SOFT_MESSAGES, "queues.quota-soft-messages"),
        HARD_MESSAGES(QueueSettings.QUOTA_HARD_MESSAGES, "queues.quota-hard-messages"),
        SOFT_BYTES(QueueSettings.QUOTA_SOFT_BYTES, "queues.quota-soft-bytes"),
        HARD_BYTES(QueueSettings.QUOTA_HARD_BYTES, "queues.quota-hard-bytes"),
        OVERFLOW(QueueSettings.OVERFLOW_POLICY, "queues.overflow-policy");

        private final String declareKey;
        private final String configKey;

        Setting(String declareKey, String configKey) {
            this.declareKey = declareKey;
            this.configKey = configKey;
        }

        /** The DECLARE's key of this setting ({@code quotaHardMessages}). */
        public String declareKey() {
            return declareKey;
        }
    }

    /** Levels and policy that are all the configuration's defaults. */
    public QuotaSettings(long softMessages, long hardMessages, long softBytes, long hardBytes, OverflowPolicy overflow) {
        this(softMessages, hardMessages, softBytes, hardBytes, overflow, Set.of());
    }

    public QuotaSettings {
        declared = declared == null || declared.isEmpty() ? Set.of() : Collections.unmodifiableSet(EnumSet.copyOf(declared));
        for (Setting level : List.of(Setting.SOFT_MESSAGES, Setting.HARD_MESSAGES, Setting.SOFT_BYTES, Setting.HARD_BYTES)) {
            long value = level(level, softMessages, hardMessages, softBytes, hardBytes);
            if (value < 0) {
                throw new IllegalArgumentException(key(level, declared) + " " + value
                        + " is negative; a quota is 0 (none) or more");
            }
        }
        if (hardMessages > 0 && softMessages > hardMessages) {
            throw new IllegalArgumentException(key(Setting.SOFT_MESSAGES, declared) + " " + softMessages + " is above "
                    + key(Setting.HARD_MESSAGES, declared) + " " + hardMessages + "; a soft quota is at most the hard one");
        }
        if (hardBytes > 0 && softBytes > hardBytes) {
            throw new IllegalArgumentException(key(Setting.SOFT_BYTES, declared) + " " + softBytes + " is above "
                    + key(Setting.HARD_BYTES, declared) + " " + hardBytes + "; a soft quota is at most the hard one");
        }
    }

    /**
     * The key that holds {@code setting} for this queue, for a sentence that refuses or slows a producer by it: the
     * DECLARE's ({@code quotaHardMessages}) if the queue's declare gave it, else the configuration's
     * ({@code queues.quota-hard-messages}); so the operator knows which one to change.
     */
    public String key(Setting setting) {
        return key(setting, declared);
    }

    /** The level {@code setting} holds (not the overflow policy, which is no level). */
    public long level(Setting setting) {
        return level(setting, softMessages, hardMessages, softBytes, hardBytes);
    }

    private static String key(Setting setting, Set<Setting> declared) {
        return declared.contains(setting) ? setting.declareKey : setting.configKey;
    }

    private static long level(Setting setting, long softMessages, long hardMessages, long softBytes, long hardBytes) {
        return switch (setting) {
            case SOFT_MESSAGES -> softMessages;
            case HARD_MESSAGES -> hardMessages;
            case SOFT_BYTES -> softBytes;
            case HARD_BYTES -> hardBytes;
            case OVERFLOW -> throw new IllegalArgumentException("the overflow policy is no level");
        };
    }

    /** The way producers are held back at the hard level. */
    public enum OverflowPolicy {
        /** Producers are told BLOCKED and wait until the backlog drains below the resume level. */
        BLOCK,
        /** Publishes beyond the hard level fail at once with QUEUE_BLOCKED. */
        REJECT,
        /** The oldest unacknowledged messages are discarded (and dead-lettered if configured) to make room. */
        DROP_OLDEST;

        /** The policy {@code text} names; refused naming {@code key}, the setting it was given as. */
        public static OverflowPolicy parse(String text, String key) {
            return switch (text) {
                case "block" -> BLOCK;
                case "reject" -> REJECT;
                case "drop-oldest" -> DROP_OLDEST;
                default -> throw new IllegalArgumentException(key + " '" + text + "' is not one of block, reject, drop-oldest");
            };
        }
    }
}
