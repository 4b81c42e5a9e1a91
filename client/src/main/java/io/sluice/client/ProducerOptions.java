package io.sluice.client;

/**
 * Settings of one {@link Producer}. Immutable.
 *
 * @param maxInFlight      messages sent but not yet confirmed or failed; {@code sendAsync} blocks its caller
 *                         while this many are outstanding (default 1000)
 * @param maxBatchMessages a PUBLISH frame is written as soon as it holds this many messages (default 256)
 * @param maxBatchBytes    ... or this many payload bytes (default 256 KiB); otherwise the batch is written at
 *                         the end of the network thread's current turn, so no linger is added
 * @param flowListener     told about FLOW changes of the producer's queue; may be {@code null}
 * @param blockedTimeout   while the broker says the queue is BLOCKED, messages wait in the producer, unsent;
 *                         a message that has waited this long fails with {@link SluiceTimeoutException}
 *                         (default 60 s); one longer than about 73 years counts as 73 years (never, in practice)
 * @param name             a stable name makes this a named producer (docs/protocol.md, "Idempotent publishing"):
 *                         its producer id comes from the name, so the broker recognises resends across
 *                         restarts of this process; each new instance gets a new epoch from the broker, which
 *                         fences every older instance still running under the name; {@code null} (the
 *                         default) for a random id per producer, which deduplicates resends after reconnects
 *                         but not across restarts of the publishing process
 */
public record ProducerOptions(int maxInFlight, int maxBatchMessages, int maxBatchBytes, FlowListener flowListener,
                              java.time.Duration blockedTimeout, String name) {
    public static final java.time.Duration DEFAULT_BLOCKED_TIMEOUT = java.time.Duration.ofSeconds(60);
    public static final ProducerOptions DEFAULT = new ProducerOptions(1000, 256, 256 * 1024, null);

    public ProducerOptions(int maxInFlight, int maxBatchMessages, int maxBatchBytes, FlowListener flowListener) {
        this(maxInFlight, maxBatchMessages, maxBatchBytes, flowListener, DEFAULT_BLOCKED_TIMEOUT, null);
    }

    public ProducerOptions {
        if (blockedTimeout == null || blockedTimeout.isNegative() || blockedTimeout.isZero()) {
            throw new IllegalArgumentException("blockedTimeout " + blockedTimeout + " must be positive");
        }
        if (maxInFlight < 1) {
            throw new IllegalArgumentException("maxInFlight " + maxInFlight + " is below 1");
        }
        if (maxBatchMessages < 1) {
            throw new IllegalArgumentException("maxBatchMessages " + maxBatchMessages + " is below 1");
        }
        if (maxBatchBytes < 1) {
            throw new IllegalArgumentException("maxBatchBytes " + maxBatchBytes + " is below 1");
        }
        String nameProblem = name == null ? null : io.sluice.protocol.ProducerInitFrame.nameProblem(name);
        if (nameProblem != null) {
            throw new IllegalArgumentException(nameProblem);
        }
    }

    public ProducerOptions withFlowListener(FlowListener listener) {
        return new ProducerOptions(maxInFlight, maxBatchMessages, maxBatchBytes, listener, blockedTimeout, name);
    }

    public ProducerOptions withMaxInFlight(int max) {
        return new ProducerOptions(max, maxBatchMessages, maxBatchBytes, flowListener, blockedTimeout, name);
    }

    public ProducerOptions withBlockedTimeout(java.time.Duration timeout) {
        return new ProducerOptions(maxInFlight, maxBatchMessages, maxBatchBytes, flowListener, timeout, name);
    }

    /** A named producer (see {@code name} above). */
    public ProducerOptions withName(String producerName) {
        return new ProducerOptions(maxInFlight, maxBatchMessages, maxBatchBytes, flowListener, blockedTimeout, producerName);
    }
}
