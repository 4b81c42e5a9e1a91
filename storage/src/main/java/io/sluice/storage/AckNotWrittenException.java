package io.sluice.storage;

import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * What {@link QueueStore#ackRangeExcept} throws when the queue's ack state could not write the acks (the queue's storage
 * failed, docs/storage.md, rule "a failed force is final"): the range is acknowledged in memory all the same, and
 * {@link #acked} says what that took, so that the caller's figures (a cluster node's backlog and counters) follow what
 * the store now holds rather than lose the bytes of messages that are gone.
 */
public final class AckNotWrittenException extends UncheckedIOException {
    private final transient AckedRange acked;

    AckNotWrittenException(UncheckedIOException failure, AckedRange acked) {
        super(failure.getMessage(), failure.getCause());
        this.acked = acked;
    }

    /** What the call acknowledged in memory: how many messages, and their headers plus payload. */
    public AckedRange acked() {
        return acked;
    }
}
