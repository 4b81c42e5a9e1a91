package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A set of message ids kept as disjoint ranges, so that what it costs follows the ranges, not the ids: what a cluster
 * leader's purges hold ({@link LeaderHold}) and what they gave back behind the reader ({@link DeliveryOrder}), both of
 * which may span millions of messages. Not thread-safe.
 */
final class RangeSet {
    /** Each range's first id to its last, disjoint and never adjacent. */
    private final TreeMap<Long, Long> ranges = new TreeMap<>();
    /** Ids in the set. */
    private long span;

    boolean isEmpty() {
        return ranges.isEmpty();
    }

    /** How many ids the set holds. */
    long span() {
        return span;
    }

    boolean contains(long id) {
        if (ranges.isEmpty()) {
            return false;
        }
        Map.Entry<Long, Long> below = ranges.floorEntry(id);
        return below != null && below.getValue() >= id;
    }

    /** Adds {@code from..to}; what the set holds of it already, and the ranges it touches, are merged with it. */
    void add(long from, long to) {
        long first = from;
        long last = to;
        Map.Entry<Long, Long> below = ranges.floorEntry(from);
        if (below != null && below.getValue() >= from - 1) {
            first = below.getKey();
            last = Math.max(last, below.getValue());
            removeEntry(below.getKey(), below.getValue());
        }
        for (Map.Entry<Long, Long> next = ranges.ceilingEntry(first); next != null && next.getKey() <= last + 1;
             next = ranges.ceilingEntry(first)) {
            last = Math.max(last, next.getValue());
            removeEntry(next.getKey(), next.getValue());
        }
        ranges.put(first, last);
        span += last - first + 1;
    }

    /** Removes {@code from..to} from the set; adds what it held of it to {@code removed}, in ascending order, unless null. */
    void remove(long from, long to, List<IdRange> removed) {
        Map.Entry<Long, Long> below = ranges.floorEntry(from);
        Long start = below != null && below.getValue() >= from ? below.getKey() : ranges.ceilingKey(from);
        while (start != null && start <= to) {
            long first = start;
            long last = ranges.get(start);
            removeEntry(first, last);
            if (first < from) {
                ranges.put(first, from - 1);
                span += from - first;
            }
            if (last > to) {
                ranges.put(to + 1, last);
                span += last - to;
            }
            if (removed != null) {
                removed.add(new IdRange(Math.max(first, from), Math.min(last, to)));
            }
            start = ranges.ceilingKey(Math.min(last, to) + 1);
        }
    }

    /** The parts of {@code from..to} the set does not hold, in ascending order, added to {@code out}. */
    void addOutside(long from, long to, List<IdRange> out) {
        long at = from;
        Map.Entry<Long, Long> below = ranges.floorEntry(from);
        if (below != null && below.getValue() >= from) {
            at = below.getValue() + 1;
        }
        for (Map.Entry<Long, Long> next = ranges.ceilingEntry(at); at <= to && next != null && next.getKey() <= to;
             next = ranges.ceilingEntry(at)) {
            if (next.getKey() > at) {
                out.add(new IdRange(at, next.getKey() - 1));
            }
            at = next.getValue() + 1;
        }
        if (at <= to) {
            out.add(new IdRange(at, to));
        }
    }

    /** The lowest range, or null if the set is empty. */
    IdRange first() {
        Map.Entry<Long, Long> first = ranges.firstEntry();
        return first == null ? null : new IdRange(first.getKey(), first.getValue());
    }

    /** Every range, in ascending order; the set is then empty. */
    List<IdRange> drain() {
        List<IdRange> all = new ArrayList<>(ranges.size());
        ranges.forEach((first, last) -> all.add(new IdRange(first, last)));
        clear();
        return all;
    }

    void clear() {
        ranges.clear();
        span = 0;
    }

    private void removeEntry(long first, long last) {
        ranges.remove(first);
        span -= last - first + 1;
    }
}
