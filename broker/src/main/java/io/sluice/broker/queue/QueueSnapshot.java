package io.sluice.broker.queue;

import io.sluice.protocol.FlowState;

import java.util.List;

/**
 * One queue's figures at one instant, taken on the queue's executor by {@link BrokerQueue#snapshot()}:
 * consistent with each other, immutable, safe to read from any thread.
 *
 * @param backlogMessages messages stored and not yet acknowledged
 * @param backlogBytes    their headers plus payload bytes
 * @param inFlightMessages delivered to a consumer and not yet acknowledged
 * @param flowState       what producers were last told
 * @param flowReason      why (empty when free)
 * @param consumers       one entry per subscription
 * @param producers       the connections that published here and are still open
 * @param counters        message counters since the broker started
 * @param oldestReadyTimestampMillis store timestamp of the oldest ready message (stored, not out with
 *                        a consumer, not waiting out a requeue delay), or -1 when there is none
 * @param blockedNanos    time the flow state was BLOCKED since the broker started, the current stretch included
 * @param trackedProducers producers the queue's producer table holds (idempotent publishing; 0 when off)
 */
public record QueueSnapshot(String name, long backlogMessages, long backlogBytes, int inFlightMessages,
                            FlowState flowState, String flowReason, List<ConsumerFigures> consumers,
                            List<String> producers, Counters counters,
                            long oldestReadyTimestampMillis, long blockedNanos, int trackedProducers) {

    /** Backlog messages that are not out with a consumer. */
    public long readyMessages() {
        return Math.max(0, backlogMessages - inFlightMessages);
    }

    /**
     * One subscription: its connection, tag, remaining credit, outstanding deliveries and whether its
     * connection accepts more writes (false: the broker delivers nothing to it until it drains).
     */
    public record ConsumerFigures(String connection, int tag, long credit, int unackedMessages, boolean writable) {
    }

    /** Messages counted since the broker started; each only grows. */
    public record Counters(long published, long confirmed, long delivered, long redelivered, long acked, long nacked,
                           long deadLettered, long deadLetterFailures, long dropped, long publishRefused,
                           long duplicates, long producersEvicted, long producersExpired) {
    }
}
