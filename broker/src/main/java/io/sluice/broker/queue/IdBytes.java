package io.sluice.broker.queue;

import io.netty.util.collection.LongObjectHashMap;
import io.netty.util.collection.LongObjectMap;

import java.util.Arrays;
import java.util.function.LongConsumer;

/**
 * A set of message ids, each with its message's bytes (headers plus payload) as the backlog counted them: what a cluster
 * leader takes off the backlog before its entry is applied (a consumer's ack, R5; a drop, R9 of docs/replication.md) and
 * counts again if the entry is not committed. Kept here so that giving them back reads nothing: a store that fails a read
 * then could strand the ids after it. Keys spread as {@link IdSet}'s; one boxed size per id. Not thread-safe.
 */
final class IdBytes {
    private final LongObjectHashMap<Integer> bytes = new LongObjectHashMap<>();

    void add(long id, int messageBytes) {
        bytes.put(SpreadIds.spread(id), Integer.valueOf(messageBytes));
    }

    boolean contains(long id) {
        return bytes.containsKey(SpreadIds.spread(id));
    }

    /** Removes {@code id}; returns its bytes, or -1 if it was not in the set. */
    int remove(long id) {
        Integer removed = bytes.remove(SpreadIds.spread(id));
        return removed == null ? -1 : removed;
    }

    int size() {
        return bytes.size();
    }

    /** Hands {@code action} every id of the set, in no particular order; the set must not change meanwhile. */
    void forEach(LongConsumer action) {
        for (LongObjectMap.PrimitiveEntry<Integer> entry : bytes.entries()) {
            action.accept(SpreadIds.unspread(entry.key()));
        }
    }

    /** Every id of the set with its bytes, in ascending id order; the set is then empty. */
    Drained drain() {
        long[] ids = new long[bytes.size()];
        int n = 0;
        for (long key : bytes.keySet()) {
            ids[n++] = SpreadIds.unspread(key);
        }
        Arrays.sort(ids);
        int[] sizes = new int[ids.length];
        for (int i = 0; i < ids.length; i++) {
            sizes[i] = bytes.get(SpreadIds.spread(ids[i]));
        }
        bytes.clear();
        return new Drained(ids, sizes);
    }

    /** Ids in ascending order, and the bytes of each: {@code bytes[i]} is {@code ids[i]}'s. */
    record Drained(long[] ids, int[] bytes) {
        static final Drained NONE = new Drained(new long[0], new int[0]);

        static Drained of(long id, int messageBytes) {
            return new Drained(new long[] {id}, new int[] {messageBytes});
        }
    }
}
