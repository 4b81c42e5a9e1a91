package io.sluice.broker.queue;

import java.util.ArrayDeque;
import java.util.function.LongConsumer;

/**
 * Messages due for redelivery now, in the order they are to go out, with membership in O(1): an
 * acknowledgement of a message taken back after its ack timeout must find it among them, for a
 * range of ids as for one. Removal is lazy: a removed id stays in the order until it comes up and
 * is skipped there. Touched only on its queue's executor.
 */
final class ReadyQueue {
    private final ArrayDeque<Long> order = new ArrayDeque<>();
    private final IdSet members = new IdSet();

    void addLast(long id) {
        if (!members.contains(id)) {
            members.add(id);
            order.addLast(id);
        }
    }

    void addFirst(long id) {
        if (!members.contains(id)) {
            members.add(id);
            order.addFirst(id);
        }
    }

    /** The next id due, or -1. */
    long pollFirst() {
        while (!order.isEmpty()) {
            long id = order.pollFirst();
            if (members.contains(id)) {
                members.remove(id);
                return id;
            }
        }
        return -1;
    }

    boolean remove(long id) {
        if (!members.contains(id)) {
            return false;
        }
        members.remove(id);
        if (members.size() == 0) {
            order.clear();
        }
        return true;
    }

    /**
     * Removes every id in {@code from..to} that {@code eligible} accepts and hands each to {@code removed}; costs the smaller of the
     * range's width and the number of ids waiting, so a wide range over a long queue stays cheap.
     */
    int removeRange(long from, long to, java.util.function.LongPredicate eligible, LongConsumer removed) {
        if (members.size() == 0 || to < from) {
            return 0;
        }
        int hits = 0;
        // A client's range may end at Long.MAX_VALUE (no id is above it, so "id <= to" never turns false) or be so wide
        // that to - from overflows: walk by offset, and only a span known to be short.
        long span = to - from;
        if (span >= 0 && span < members.size()) {
            for (long i = 0; i <= span; i++) {
                long id = from + i;
                if (members.contains(id) && eligible.test(id) && remove(id)) {
                    removed.accept(id);
                    hits++;
                }
            }
        } else {
            for (Long id : order.toArray(new Long[0])) {
                if (id >= from && id <= to && members.contains(id) && eligible.test(id) && remove(id)) {
                    removed.accept(id);
                    hits++;
                }
            }
        }
        return hits;
    }

    boolean isEmpty() {
        return members.size() == 0;
    }

    int size() {
        return members.size();
    }

    void clear() {
        for (Long id : order) {
            members.remove(id);
        }
        order.clear();
    }

    /** Every id waiting, in no particular order. */
    void forEach(LongConsumer visitor) {
        for (Long id : order) {
            if (members.contains(id)) {
                visitor.accept(id);
            }
        }
    }
}
