package io.sluice.broker.cluster;

import io.sluice.broker.queue.ProducerLink;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.IdRange;

import java.util.List;

/**
 * The producer a node applies a replicated publish for when no client of its own waits for it (a follower,
 * or the leader replaying its log at start-up): confirms, refusals, window and flow go nowhere. Inactive,
 * so a queue keeps no state for it. Stateless, thread-safe.
 */
final class ReplicaLink implements ProducerLink {
    static final ReplicaLink INSTANCE = new ReplicaLink();

    private ReplicaLink() {
    }

    @Override
    public void confirm(long producerId, List<IdRange> sequences) {
    }

    @Override
    public void refuse(long producerId, IdRange sequences, ErrorCode code, String message) {
    }

    @Override
    public void publishCredit(int messages, long windowBytes, long heldBytes) {
    }

    @Override
    public int windowBytes(int headersLength, int payloadLength) {
        return headersLength + payloadLength; // no window: any measure will do
    }

    @Override
    public void flow(String queue, FlowState state, String reason) {
    }

    @Override
    public void flush() {
    }

    @Override
    public String describe() {
        return "the replicated log";
    }

    @Override
    public String id() {
        return "replica";
    }

    @Override
    public boolean isActive() {
        return false;
    }
}
