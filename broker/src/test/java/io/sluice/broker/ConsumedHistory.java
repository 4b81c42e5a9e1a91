package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.ConsumerOptions;
import io.sluice.protocol.QueueSettings;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * What one consumer saw of a cluster's queue, acking each message as it came (the cluster tests' final check):
 * every payload with the ids it came under (more than one: stored twice), and the history's faults: a message
 * delivered again after its ack, or a producer's message delivered before one that producer sent earlier.
 * Payloads are {@link Payloads} of {@code producer << PRODUCER_SHIFT | that producer's count}.
 */
record ConsumedHistory(Map<Long, Set<Long>> idsByPayload, List<String> faults) {
    /** A payload's producer, in its high bits; its count of that producer's sends below. */
    static final int PRODUCER_SHIFT = 40;

    static long payload(int producer, long count) {
        return (long) producer << PRODUCER_SHIFT | count;
    }

    /** How many messages were stored more than once (consumed under more than one id). */
    long storedTwice() {
        return idsByPayload.values().stream().mapToLong(ids -> ids.size() - 1).sum();
    }

    /** Subscribes through the cluster and acks until the leader's queue is empty. */
    static ConsumedHistory consumeEverything(ConnectionOptions options, String queue) throws Exception {
        Map<Long, Set<Long>> idsByPayload = new ConcurrentHashMap<>();
        List<String> faults = new CopyOnWriteArrayList<>();
        Set<Long> ackedIds = ConcurrentHashMap.newKeySet();
        Map<Long, Long> lastCountByProducer = new ConcurrentHashMap<>();
        try (Connection consuming = Connection.connect(options)) {
            // One consumer: its handler runs for one message at a time, in delivery order.
            consuming.subscribe(queue, ConsumerOptions.DEFAULT, m -> {
                long payload = Payloads.sequence(m.payload());
                if (ackedIds.contains(m.id())) {
                    faults.add("message " + m.id() + " (payload " + payload + ") delivered again after its ack");
                }
                boolean first = idsByPayload.computeIfAbsent(payload, p -> ConcurrentHashMap.newKeySet()).isEmpty();
                idsByPayload.get(payload).add(m.id());
                long producer = payload >>> PRODUCER_SHIFT;
                long count = payload & ((1L << PRODUCER_SHIFT) - 1);
                Long last = lastCountByProducer.get(producer);
                if (first && last != null && count < last) {
                    faults.add("producer " + producer + "'s message " + count + " (id " + m.id() + ") delivered after its message " + last);
                }
                if (first) {
                    lastCountByProducer.merge(producer, count, Math::max);
                }
                m.ack();
                ackedIds.add(m.id());
            });
            TestAwait.value("the queue on the leader empty (everything consumed and acked)", Duration.ofSeconds(120),
                    () -> consuming.declareQueue(queue, QueueSettings.EMPTY), left -> left == 0);
        }
        return new ConsumedHistory(idsByPayload, faults);
    }
}
