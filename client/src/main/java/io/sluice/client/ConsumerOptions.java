package io.sluice.client;

import java.time.Duration;

/**
 * Settings of one {@link Consumer}. Immutable.
 *
 * @param credit         messages the broker may deliver before they are settled (default 1000); the consumer
 *                       tops the credit up by the settled count once an eighth of it has been acked or nacked
 * @param ackBatchSize   acks are written as soon as this many are pending (default 128) ...
 * @param ackFlushDelay  ... or this long after the first pending one (default 1 ms; at most about 292 years, which
 *                       nanoseconds count)
 */
public record ConsumerOptions(int credit, int ackBatchSize, Duration ackFlushDelay) {
    public static final ConsumerOptions DEFAULT = new ConsumerOptions(1000, 128, Duration.ofMillis(1));

    public ConsumerOptions {
        if (credit < 1) {
            throw new IllegalArgumentException("credit " + credit + " is below 1");
        }
        if (ackBatchSize < 1) {
            throw new IllegalArgumentException("ackBatchSize " + ackBatchSize + " is below 1");
        }
        if (ackFlushDelay == null || ackFlushDelay.isNegative()) {
            throw new IllegalArgumentException("ackFlushDelay " + ackFlushDelay + " must be zero or positive");
        }
        // The network thread schedules each flush in nanoseconds: a delay beyond that would throw there at every ack
        // short of a full batch, and a consumer whose credit is below ackBatchSize would never ack nor top up.
        if (ackFlushDelay.compareTo(Duration.ofNanos(Long.MAX_VALUE)) > 0) {
            throw new IllegalArgumentException("ackFlushDelay " + ackFlushDelay
                    + " is too long to count in nanoseconds (at most about 292 years)");
        }
    }

    public ConsumerOptions withCredit(int newCredit) {
        return new ConsumerOptions(newCredit, ackBatchSize, ackFlushDelay);
    }
}
