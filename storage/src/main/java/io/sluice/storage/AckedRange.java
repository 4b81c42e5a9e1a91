package io.sluice.storage;

/** What {@link QueueStore#ackRangeExcept} newly acknowledged: how many messages, and their headers plus payload. */
public record AckedRange(long messages, long bytes) {
}
