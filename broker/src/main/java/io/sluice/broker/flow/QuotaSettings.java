package io.sluice.broker.flow;

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
 */
public record QuotaSettings(long softMessages, long hardMessages, long softBytes, long hardBytes, OverflowPolicy overflow) {
    /** Below this share of a hard level a blocked queue resumes. */
    static final double RESUME_RATIO = 0.9;
    /** Below this share of a soft level a slowed queue runs free again. */
    static final double FREE_RATIO = 0.9;

    public static final QuotaSettings NONE = new QuotaSettings(0, 0, 0, 0, OverflowPolicy.BLOCK);

    public QuotaSettings {
        if (softMessages < 0 || hardMessages < 0 || softBytes < 0 || hardBytes < 0) {
            throw new IllegalArgumentException("quota levels must not be negative");
        }
        if (hardMessages > 0 && softMessages > hardMessages) {
            throw new IllegalArgumentException("soft quota of " + softMessages + " messages is above the hard quota of " + hardMessages);
        }
        if (hardBytes > 0 && softBytes > hardBytes) {
            throw new IllegalArgumentException("soft quota of " + softBytes + " bytes is above the hard quota of " + hardBytes);
        }
    }

    /** The way producers are held back at the hard level. */
    public enum OverflowPolicy {
        /** Producers are told BLOCKED and wait until the backlog drains below the resume level. */
        BLOCK,
        /** Publishes beyond the hard level fail at once with QUEUE_BLOCKED. */
        REJECT,
        /** The oldest unacknowledged messages are discarded (and dead-lettered if configured) to make room. */
        DROP_OLDEST;

        public static OverflowPolicy parse(String text) {
            return switch (text) {
                case "block" -> BLOCK;
                case "reject" -> REJECT;
                case "drop-oldest" -> DROP_OLDEST;
                default -> throw new IllegalArgumentException("overflow policy '" + text + "' is not one of block, reject, drop-oldest");
            };
        }
    }
}
