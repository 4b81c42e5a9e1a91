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
 */
public record ProducerOptions(int maxInFlight, int maxBatchMessages, int maxBatchBytes, FlowListener flowListener) {
    public static final ProducerOptions DEFAULT = new ProducerOptions(1000, 256, 256 * 1024, null);

    public ProducerOptions {
        if (maxInFlight < 1) {
            throw new IllegalArgumentException("maxInFlight " + maxInFlight + " is below 1");
        }
        if (maxBatchMessages < 1) {
            throw new IllegalArgumentException("maxBatchMessages " + maxBatchMessages + " is below 1");
        }
        if (maxBatchBytes < 1) {
            throw new IllegalArgumentException("maxBatchBytes " + maxBatchBytes + " is below 1");
        }
    }

    public ProducerOptions withFlowListener(FlowListener listener) {
        return new ProducerOptions(maxInFlight, maxBatchMessages, maxBatchBytes, listener);
    }

    public ProducerOptions withMaxInFlight(int max) {
        return new ProducerOptions(max, maxBatchMessages, maxBatchBytes, flowListener);
    }
}
