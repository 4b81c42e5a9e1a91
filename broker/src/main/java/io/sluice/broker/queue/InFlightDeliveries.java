package io.sluice.broker.queue;

import io.netty.util.collection.LongObjectHashMap;
import io.netty.util.collection.LongObjectMap;

import java.util.Arrays;

/**
 * The deliveries of one consumer that are not yet settled, by message id. Touched only on the queue's
 * executor.
 *
 * <p>A primitive-keyed hash map (keys spread, see {@link SpreadIds}) rather than a sorted map: every delivery is put once and removed once,
 * so the per-message cost (no boxed key, no tree node, no rebalancing) is what matters, and the
 * operations that need id order (acks and nacks by range, taking everything back) get it by walking
 * the range when it is short, or by sorting the ids they collect when it is not.
 */
final class InFlightDeliveries {
    /** Ack ranges are walked id by id while they span at most this many ids per delivery held. */
    private static final int WALK_FACTOR = 4;

    private final LongObjectHashMap<ConsumerSession.Delivery> byId = new LongObjectHashMap<>();

    /** What a removal hands over, in ascending id order. */
    interface Removed {
        void accept(long id, ConsumerSession.Delivery delivery);
    }

    void put(long id, ConsumerSession.Delivery delivery) {
        byId.put(SpreadIds.spread(id), delivery);
    }

    int size() {
        return byId.size();
    }

    boolean isEmpty() {
        return byId.isEmpty();
    }

    /** Removes the deliveries with ids in {@code [from, toInclusive]}, in ascending id order; returns how many. */
    int removeRange(long from, long toInclusive, Removed removed) {
        if (byId.isEmpty() || toInclusive < from) {
            return 0;
        }
        long span = toInclusive - from; // negative on overflow: then the range is huge, take the sorting path
        int count = 0;
        if (span >= 0 && span < (long) WALK_FACTOR * byId.size()) {
            for (long i = 0; i <= span; i++) {
                long id = from + i;
                ConsumerSession.Delivery delivery = byId.remove(SpreadIds.spread(id));
                if (delivery != null) {
                    removed.accept(id, delivery);
                    count++;
                }
            }
            return count;
        }
        long[] ids = new long[byId.size()];
        for (LongObjectMap.PrimitiveEntry<ConsumerSession.Delivery> e : byId.entries()) {
            long id = SpreadIds.unspread(e.key());
            if (id >= from && id <= toInclusive) {
                ids[count++] = id;
            }
        }
        Arrays.sort(ids, 0, count);
        for (int i = 0; i < count; i++) {
            removed.accept(ids[i], byId.remove(SpreadIds.spread(ids[i])));
        }
        return count;
    }

    /** Removes every delivery; returns their ids in ascending order. */
    long[] removeAll() {
        long[] ids = ids();
        byId.clear();
        return ids;
    }

    /** Removes the deliveries sent before {@code deadlineNanos} (System.nanoTime); returns their ids, ascending. */
    long[] removeDeliveredBefore(long deadlineNanos) {
        long[] ids = new long[byId.size()];
        int count = 0;
        for (LongObjectMap.PrimitiveEntry<ConsumerSession.Delivery> e : byId.entries()) {
            if (e.value().deliveredAtNanos() - deadlineNanos < 0) {
                ids[count++] = e.key();
            }
        }
        for (int i = 0; i < count; i++) {
            byId.remove(ids[i]);
            ids[i] = SpreadIds.unspread(ids[i]);
        }
        long[] expired = Arrays.copyOf(ids, count);
        Arrays.sort(expired);
        return expired;
    }

    /** The ids held, ascending. */
    long[] ids() {
        long[] ids = new long[byId.size()];
        int i = 0;
        for (LongObjectMap.PrimitiveEntry<ConsumerSession.Delivery> e : byId.entries()) {
            ids[i++] = SpreadIds.unspread(e.key());
        }
        Arrays.sort(ids);
        return ids;
    }
}
