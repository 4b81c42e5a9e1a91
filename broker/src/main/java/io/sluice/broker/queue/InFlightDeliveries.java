package io.sluice.broker.queue;

import java.util.Arrays;

/**
 * The deliveries of one consumer that are not yet settled, by message id. Touched only on the queue's
 * executor.
 *
 * <p>An open-addressing hash table over primitive arrays (linear probing, keys spread by {@link SpreadIds},
 * backward-shift deletion), so that putting and removing a delivery, once each per message, allocates
 * nothing: no boxed key, no entry, no record (a per-delivery record was the last per-message garbage
 * of the queue's event loop, and with it a young GC every few seconds under W1). The operations that
 * need id order (acks and nacks by range, taking everything back, ack timeouts) get it by walking the
 * range when it is short, or by sorting the ids they collect when it is not. Message ids are never
 * negative (they are segment and sequence numbers).
 */
final class InFlightDeliveries {
    /** Ack ranges are walked id by id while they span at most this many ids per delivery held. */
    private static final int WALK_FACTOR = 4;
    private static final long FREE = Long.MIN_VALUE;
    private static final int INITIAL_CAPACITY = 64;

    private long[] ids;
    private long[] deliveredAtNanos;
    private int[] bytes;
    private long[] appendedAtMillis;
    private int mask;
    private int size;

    /** What a removal hands over, in ascending id order: the delivery's bytes and its store timestamp. */
    interface Removed {
        void accept(long id, int bytes, long appendedAtMillis);
    }

    InFlightDeliveries() {
        allocate(INITIAL_CAPACITY);
    }

    /**
     * @param deliveredAtNanos when it was sent (System.nanoTime, for the ack timeout)
     * @param bytes            headers plus payload, so acks can keep the byte backlog exact
     * @param appendedAtMillis the message's store timestamp, for the publish-to-ack latency
     */
    void put(long id, long deliveredAtNanos, int bytes, long appendedAtMillis) {
        if (id < 0) {
            throw new IllegalArgumentException("message id " + id + " is negative");
        }
        if (2 * (size + 1) > ids.length) {
            grow();
        }
        int slot = slotOf(id);
        while (ids[slot] != FREE && ids[slot] != id) {
            slot = (slot + 1) & mask;
        }
        if (ids[slot] == FREE) {
            size++;
        }
        ids[slot] = id;
        this.deliveredAtNanos[slot] = deliveredAtNanos;
        this.bytes[slot] = bytes;
        this.appendedAtMillis[slot] = appendedAtMillis;
    }

    /** True if delivery {@code id} is held here. */
    boolean contains(long id) {
        if (size == 0) {
            return false;
        }
        int slot = slotOf(id);
        while (ids[slot] != id) {
            if (ids[slot] == FREE) {
                return false;
            }
            slot = (slot + 1) & mask;
        }
        return true;
    }

    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    /** Removes the deliveries with ids in {@code [from, toInclusive]}, in ascending id order; returns how many. */
    int removeRange(long from, long toInclusive, Removed removed) {
        if (size == 0 || toInclusive < from) {
            return 0;
        }
        long span = toInclusive - from; // negative on overflow: then the range is huge, take the sorting path
        int count = 0;
        if (span >= 0 && span < (long) WALK_FACTOR * size) {
            for (long i = 0; i <= span; i++) {
                if (remove(from + i, removed)) {
                    count++;
                }
            }
            return count;
        }
        long[] found = new long[size];
        for (long id : ids) {
            if (id != FREE && id >= from && id <= toInclusive) {
                found[count++] = id;
            }
        }
        Arrays.sort(found, 0, count);
        for (int i = 0; i < count; i++) {
            remove(found[i], removed);
        }
        return count;
    }

    /** Removes every delivery; returns their ids in ascending order. */
    long[] removeAll() {
        long[] all = ids();
        Arrays.fill(ids, FREE);
        size = 0;
        return all;
    }

    /** Removes the deliveries sent before {@code deadlineNanos} (System.nanoTime); returns their ids, ascending. */
    long[] removeDeliveredBefore(long deadlineNanos) {
        long[] expired = new long[size];
        int count = 0;
        for (int slot = 0; slot < ids.length; slot++) {
            if (ids[slot] != FREE && deliveredAtNanos[slot] - deadlineNanos < 0) {
                expired[count++] = ids[slot];
            }
        }
        for (int i = 0; i < count; i++) {
            remove(expired[i], null);
        }
        expired = Arrays.copyOf(expired, count);
        Arrays.sort(expired);
        return expired;
    }

    /** Headers plus payload of the deliveries held. */
    long bytes() {
        long total = 0;
        for (int slot = 0; slot < ids.length; slot++) {
            if (ids[slot] != FREE) {
                total += bytes[slot];
            }
        }
        return total;
    }

    /** The ids held, ascending. */
    long[] ids() {
        long[] held = new long[size];
        int i = 0;
        for (long id : ids) {
            if (id != FREE) {
                held[i++] = id;
            }
        }
        Arrays.sort(held);
        return held;
    }

    private boolean remove(long id, Removed removed) {
        int slot = slotOf(id);
        while (ids[slot] != id) {
            if (ids[slot] == FREE) {
                return false;
            }
            slot = (slot + 1) & mask;
        }
        if (removed != null) {
            removed.accept(id, bytes[slot], appendedAtMillis[slot]);
        }
        size--;
        // Backward-shift deletion (Knuth 6.4, algorithm R): move later entries of the probe run into the gap
        // unless their home slot lies cyclically after the gap, so no tombstones are needed.
        int gap = slot;
        int next = slot;
        while (true) {
            next = (next + 1) & mask;
            long moving = ids[next];
            if (moving == FREE) {
                break;
            }
            int home = slotOf(moving);
            boolean homeAfterGap = gap <= next ? gap < home && home <= next : gap < home || home <= next;
            if (homeAfterGap) {
                continue;
            }
            ids[gap] = moving;
            deliveredAtNanos[gap] = deliveredAtNanos[next];
            bytes[gap] = bytes[next];
            appendedAtMillis[gap] = appendedAtMillis[next];
            gap = next;
        }
        ids[gap] = FREE;
        return true;
    }

    private int slotOf(long id) {
        long h = SpreadIds.spread(id);
        return (int) (h ^ (h >>> 32)) & mask;
    }

    private void grow() {
        long[] oldIds = ids;
        long[] oldDelivered = deliveredAtNanos;
        int[] oldBytes = bytes;
        long[] oldAppended = appendedAtMillis;
        allocate(oldIds.length * 2);
        size = 0;
        for (int slot = 0; slot < oldIds.length; slot++) {
            if (oldIds[slot] != FREE) {
                put(oldIds[slot], oldDelivered[slot], oldBytes[slot], oldAppended[slot]);
            }
        }
    }

    private void allocate(int capacity) {
        ids = new long[capacity];
        Arrays.fill(ids, FREE);
        deliveredAtNanos = new long[capacity];
        bytes = new int[capacity];
        appendedAtMillis = new long[capacity];
        mask = capacity - 1;
    }
}
