package io.sluice.broker.queue;

import io.sluice.protocol.FlowState;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

/**
 * The connections that published to one queue, which are told each change of its flow state;
 * a closed one is forgotten the next time they are told or listed. Confined to the queue's executor.
 */
final class QueuePublishers {
    private final String queue;
    private final Set<ProducerLink> links = Collections.newSetFromMap(new IdentityHashMap<>());

    QueuePublishers(String queue) {
        this.queue = queue;
    }

    /**
     * Adds a publisher; one new to the queue is told the state now unless it is FREE, since it heard no change of
     * it: a client that reconnected while the queue was blocked (to this broker, or to a cluster's new leader)
     * starts FREE and would otherwise send up to its window and then never hear the queue was blocked.
     */
    void add(ProducerLink link, FlowState state, String reason) {
        if (links.add(link) && state != FlowState.FREE) {
            link.flow(queue, state, reason);
            link.flush();
        }
    }

    /** Tells every publisher still connected that the queue is now {@code state}, for {@code reason}. */
    void tell(FlowState state, String reason) {
        links.removeIf(c -> !c.isActive());
        for (ProducerLink c : links) {
            c.flow(queue, state, reason);
            c.flush();
        }
    }

    /** The ids of the publishers still connected, sorted. */
    List<String> ids() {
        links.removeIf(c -> !c.isActive());
        return links.stream().map(ClientConnection::id).sorted().toList();
    }
}
