package io.sluice.storage;

/**
 * When an append counts as stored, and so when the broker may confirm it to the producer.
 *
 * <table>
 *   <caption>What each mode survives</caption>
 *   <tr><th>mode</th><th>process crash (kill -9)</th><th>machine crash / power loss</th></tr>
 *   <tr><td>{@link #ALWAYS}</td><td>every confirmed message</td><td>every confirmed message</td></tr>
 *   <tr><td>{@link #INTERVAL}</td><td>every confirmed message</td><td>loses up to one interval</td></tr>
 *   <tr><td>{@link #NEVER}</td><td>every confirmed message</td><td>loses what the OS had not written back</td></tr>
 * </table>
 *
 * A process crash loses nothing in any mode because the segments are memory-mapped: a completed
 * store into the mapping is in the page cache, which outlives the process.
 */
public enum DurabilityMode {
    /** The append's durable future completes only after the segment is forced to disk (group commit). */
    ALWAYS,
    /** Segments are forced every {@code syncIntervalMs}; the durable future completes on write. */
    INTERVAL,
    /** Writing back is left to the operating system; the durable future completes on write. */
    NEVER;

    /** Parses the configuration spelling ({@code always}, {@code interval}, {@code never}). */
    public static DurabilityMode parse(String text) {
        for (DurabilityMode mode : values()) {
            if (mode.name().equalsIgnoreCase(text)) {
                return mode;
            }
        }
        throw new IllegalArgumentException("durability mode '" + text + "' is not one of always, interval, never");
    }

    /** The configuration spelling. */
    public String configName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
