package io.sluice.broker.queue;

import io.netty.util.collection.LongObjectHashMap;
import io.netty.util.collection.LongObjectMap;

import java.util.function.LongConsumer;

/**
 * A set of message ids that boxes nothing: Netty's primitive-keyed map with the keys spread by
 * {@link SpreadIds} (consecutive ids would otherwise cluster in its linear probing). Not thread-safe.
 */
final class IdSet {
    private final LongObjectHashMap<Boolean> ids = new LongObjectHashMap<>();

    void add(long id) {
        ids.put(SpreadIds.spread(id), Boolean.TRUE);
    }

    boolean contains(long id) {
        return ids.containsKey(SpreadIds.spread(id));
    }

    void remove(long id) {
        ids.remove(SpreadIds.spread(id));
    }

    int size() {
        return ids.size();
    }

    /** Hands {@code action} every id of the set, in no particular order; the set must not change meanwhile. */
    void forEach(LongConsumer action) {
        for (LongObjectMap.PrimitiveEntry<Boolean> entry : ids.entries()) {
            action.accept(SpreadIds.unspread(entry.key()));
        }
    }

    /** Every id of the set, which is then empty. */
    long[] drain() {
        long[] all = new long[ids.size()];
        int n = 0;
        for (long key : ids.keySet()) {
            all[n++] = SpreadIds.unspread(key);
        }
        ids.clear();
        return all;
    }
}
