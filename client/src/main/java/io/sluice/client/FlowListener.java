package io.sluice.client;

import io.sluice.protocol.FlowState;

/**
 * Told when the broker's push-back on a queue changes (FLOW frames). Called on a client dispatch thread, or
 * on the network thread with {@link ConnectionOptions#callbacksOnNetworkThread()}; it must not block for long.
 * What it throws is logged.
 */
@FunctionalInterface
public interface FlowListener {
    /**
     * @param queue  the queue whose state changed
     * @param state  FREE, SLOWED (publish slower) or BLOCKED (publishes fail or wait until FREE)
     * @param reason the quota that tripped and its numbers; empty for FREE
     */
    void onFlow(String queue, FlowState state, String reason);
}
