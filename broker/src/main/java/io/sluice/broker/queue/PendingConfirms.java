package io.sluice.broker.queue;

import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongConsumer;

/**
 * The publishes a queue stored and has not yet confirmed, one entry per PUBLISH frame, in arrival
 * order; releasing an entry confirms its messages and gives the producer its publish window back.
 * Confined to the queue's executor.
 *
 * <p>Rules: C1 a confirm waits until its messages are durable; C2 while the queue is slowed,
 * confirms are released only as consumers acknowledge, one message for one ({@link Backlog#mayConfirm}),
 * so producers, whose in-flight windows fill up, run at the consumers' pace. (Blocked producers are
 * told to stop; what they had in flight is confirmed as stored.)
 */
final class PendingConfirms {
    private final ArrayDeque<Entry> entries = new ArrayDeque<>();

    /** The sequences of one PUBLISH frame that were stored, per producer, as ranges; built while storing it. */
    static final class StoredRanges {
        private final Map<Long, List<IdRange>> ranges = new LinkedHashMap<>();
        private long runProducer;
        private long runFrom = -1;
        private long runTo = -1;

        /** One more stored message: extends the current run of consecutive sequences of one producer, or starts one. */
        void stored(long producerId, long sequence) {
            if (runFrom >= 0 && producerId == runProducer && sequence == runTo + 1) {
                runTo = sequence;
                return;
            }
            closeRun();
            runProducer = producerId;
            runFrom = sequence;
            runTo = sequence;
        }

        private void closeRun() {
            if (runFrom < 0) {
                return;
            }
            List<IdRange> list = ranges.computeIfAbsent(runProducer, p -> new ArrayList<>());
            IdRange last = list.isEmpty() ? null : list.get(list.size() - 1);
            if (last != null && last.to() + 1 == runFrom) {
                list.set(list.size() - 1, new IdRange(last.from(), runTo));
            } else {
                list.add(new IdRange(runFrom, runTo));
            }
            runFrom = -1;
        }

        Map<Long, List<IdRange>> build() {
            closeRun();
            return ranges;
        }
    }

    private record Entry(long lastId, ProducerLink connection, Map<Long, List<IdRange>> ranges,
                         int messages, long bytes, long receivedAtNanos) {
    }

    void add(long lastId, ProducerLink connection, Map<Long, List<IdRange>> ranges, int messages, long bytes,
             long receivedAtNanos) {
        entries.add(new Entry(lastId, connection, ranges, messages, bytes, receivedAtNanos));
    }

    /**
     * Releases, in order, the entries whose messages are durable ({@code durableId}) while the
     * backlog lets them go (C2); records one publish-to-confirm latency sample per frame. Returns the
     * messages confirmed. Flushes what it wrote.
     */
    long release(long durableId, Backlog backlog, LongConsumer latencyNanos) {
        Set<ProducerLink> touched = Collections.newSetFromMap(new IdentityHashMap<>());
        long confirmed = 0;
        long now = 0;
        while (!entries.isEmpty()) {
            Entry e = entries.peek();
            if (e.lastId > durableId || !backlog.mayConfirm(e.messages)) {
                break;
            }
            entries.poll();
            if (now == 0) {
                now = System.nanoTime();
            }
            latencyNanos.accept(now - e.receivedAtNanos);
            confirmed += e.messages;
            e.ranges.forEach(e.connection::confirm);
            e.connection.publishCredit(e.messages, e.bytes);
            touched.add(e.connection);
        }
        touched.forEach(ProducerLink::flush);
        return confirmed;
    }

    /**
     * Refuses every entry still waiting (the store failed, or the queue was deleted): each producer
     * gets a PUBLISH_ERROR per range and its publish window back.
     */
    void refuseAll(ErrorCode code, String message) {
        Set<ProducerLink> touched = Collections.newSetFromMap(new IdentityHashMap<>());
        while (!entries.isEmpty()) {
            Entry e = entries.poll();
            e.ranges.forEach((producer, ranges) -> ranges.forEach(range -> e.connection.refuse(producer, range, code, message)));
            e.connection.publishCredit(e.messages, e.bytes);
            touched.add(e.connection);
        }
        touched.forEach(ProducerLink::flush);
    }

    int size() {
        return entries.size();
    }
}
