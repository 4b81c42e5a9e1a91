package io.sluice.broker.net;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Rule W2 (docs/flow-control.md, "Producer credit"): the broker's own count of what one connection's publishes hold,
 * the headers and payload ({@code headersLength + payloadLength}) of the messages of the PUBLISH and TX_PUBLISH frames
 * read from it and not yet given back, against a bound of {@code broker.publish-window-bytes}. The client never sees
 * it. It matters for a client that did not ask for WINDOW_COUNTS_HEADERS, whose {@link PublishWindow} counts payload
 * alone: within that window such a client could have the broker hold a window of messages each with headers up to
 * {@code storage.max-message-bytes}. Past the bound the connection stops reading ({@link InboundGate}, H2) until enough
 * is given back. For a client granted the capability it never exceeds its window's bytes (same unit, same bound, and
 * it is given back no later than the window), so it never pauses one that its window would not.
 *
 * <p>Taken on the connection's event loop as each frame is read ({@link ClientSession}); given back from any thread,
 * the queue's executor mostly, by the same call that hands over the PUBLISH_CREDIT for those messages
 * ({@link ClientSessionProxy#publishCredit}), so that when the loop writes that credit the count already excludes them
 * and the loop decides there whether reading resumes. Read by the admin API and the metrics from any thread.
 */
final class HeldPublishBytes {
    private final long maxBytes;
    private final AtomicLong held = new AtomicLong();

    HeldPublishBytes(long maxBytes) {
        this.maxBytes = maxBytes;
    }

    /** Messages of {@code bytes} (headers and payload) were read. On the loop. */
    void take(long bytes) {
        held.addAndGet(bytes);
    }

    /** Messages of {@code bytes} are settled: their PUBLISH_CREDIT is being handed over. Any thread. */
    void giveBack(long bytes) {
        held.addAndGet(-bytes);
    }

    /** True while the connection holds no more than the bound. */
    boolean within() {
        return held.get() <= maxBytes;
    }

    long bytes() {
        return held.get();
    }

    long maxBytes() {
        return maxBytes;
    }
}
