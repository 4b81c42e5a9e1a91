package io.sluice.broker.queue;

import io.sluice.protocol.FlowState;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

/**
 * The connections that published to one queue, which are told each change of its flow state;
 * a closed one is forgotten the next time they are told or listed, or once the set has doubled since
 * it was last cleared of closed ones. Confined to the queue's executor.
 */
final class QueuePublishers {
    /** The fewest links at which an add clears the closed ones out. */
    private static final int MIN_PRUNE_AT = 32;
    private final String queue;
    private final Set<ProducerLink> links = Collections.newSetFromMap(new IdentityHashMap<>());
    /**
     * An add that brings the set to this size first forgets the closed links, then sets it to twice what is left:
     * amortised constant per add, and at most about twice the open publishers kept. Without it a queue that stays
     * FREE, with no listing, would keep every connection that ever published to it.
     */
    private int pruneAt = MIN_PRUNE_AT;

    QueuePublishers(String queue) {
        this.queue = queue;
    }

    /**
     * Adds a publisher; one new to the queue is told the state now unless it is FREE, since it heard no change of
     * it: a client that reconnected while the queue was blocked (to this broker, or to a cluster's new leader)
     * starts FREE and would otherwise send up to its window and then never hear the queue was blocked.
     */
    void add(ProducerLink link, FlowState state, String reason) {
        if (!links.add(link)) {
            return;
        }
        if (links.size() >= pruneAt) {
            forgetClosed();
        }
        if (state != FlowState.FREE) {
            link.flow(queue, state, reason);
            link.flush();
        }
    }

    /** Tells every publisher still connected that the queue is now {@code state}, for {@code reason}. */
    void tell(FlowState state, String reason) {
        forgetClosed();
        for (ProducerLink c : links) {
            c.flow(queue, state, reason);
            c.flush();
        }
    }

    /** The ids of the publishers still connected, sorted. */
    List<String> ids() {
        forgetClosed();
        return links.stream().map(ClientConnection::id).sorted().toList();
    }

    /** The links kept, closed ones not yet forgotten included. */
    int size() {
        return links.size();
    }

    private void forgetClosed() {
        links.removeIf(c -> !c.isActive());
        pruneAt = Math.max(MIN_PRUNE_AT, 2 * links.size());
    }
}
