package io.sluice.storage.ack;

/** Outcome of acknowledging one message id. */
public enum AckResult {
    /** The message was live and unacknowledged; it is acknowledged now. */
    NEWLY_ACKED,
    /** The message was acknowledged before, or its segment has been reclaimed. */
    ALREADY_ACKED,
    /**
     * No such message: its segment is above the highest segment ever reported, or its sequence is
     * at or beyond the segment's message count. The caller reports this to the consumer.
     */
    UNKNOWN
}
