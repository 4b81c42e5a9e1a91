package io.sluice.storage.ack;

import java.util.Arrays;

/**
 * Open-addressing map from a non-negative {@code long} key to an {@code long}, without boxing. Not
 * thread-safe.
 *
 * <p>Linear probing over a power-of-two table kept at most half full; removal shifts the following
 * entries of the probe run back (no tombstones), so a map that churns — relocations recorded, then
 * dropped on ack — never degrades. Message ids are never negative, which frees -1 to mark an empty
 * slot.
 */
final class LongLongHashMap {
    private static final long EMPTY = -1L;
    private static final int MIN_CAPACITY = 16;

    private long[] keys;
    private long[] values;
    private int size;

    LongLongHashMap() {
        allocate(MIN_CAPACITY);
    }

    int size() {
        return size;
    }

    /** Table length, for callers that choose between scanning the map and probing key by key. */
    int capacity() {
        return keys.length;
    }

    boolean containsKey(long key) {
        return indexOf(key) >= 0;
    }

    /** The value for {@code key}, or {@code missingValue} if absent. */
    long get(long key, long missingValue) {
        int index = indexOf(key);
        return index >= 0 ? values[index] : missingValue;
    }

    void put(long key, long value) {
        checkKey(key);
        int mask = keys.length - 1;
        int index = slot(key, mask);
        while (keys[index] != EMPTY) {
            if (keys[index] == key) {
                values[index] = value;
                return;
            }
            index = (index + 1) & mask;
        }
        keys[index] = key;
        values[index] = value;
        if (++size > keys.length >>> 1) {
            rehash(keys.length << 1);
        }
    }

    /** Removes {@code key}; returns true if it was present. */
    boolean remove(long key) {
        int index = indexOf(key);
        if (index < 0) {
            return false;
        }
        deleteAt(index);
        return true;
    }

    /** Removes every key in {@code [from, toInclusive]}; returns how many were removed. */
    int removeRange(long from, long toInclusive) {
        int removed = 0;
        int index = 0;
        while (index < keys.length) {
            long key = keys[index];
            if (key != EMPTY && key >= from && key <= toInclusive) {
                deleteAt(index);
                removed++;
                // deleteAt may have shifted a later entry into this slot: look at it again.
            } else {
                index++;
            }
        }
        return removed;
    }

    /** Calls {@code visitor} for every entry; the visitor must not modify the map. */
    void forEach(Visitor visitor) {
        for (int i = 0; i < keys.length; i++) {
            if (keys[i] != EMPTY) {
                visitor.accept(keys[i], values[i]);
            }
        }
    }

    @FunctionalInterface
    interface Visitor {
        void accept(long key, long value);
    }

    private int indexOf(long key) {
        if (key < 0) {
            return -1;
        }
        int mask = keys.length - 1;
        int index = slot(key, mask);
        long probe;
        while ((probe = keys[index]) != EMPTY) {
            if (probe == key) {
                return index;
            }
            index = (index + 1) & mask;
        }
        return -1;
    }

    private void deleteAt(int index) {
        int mask = keys.length - 1;
        int hole = index;
        int next = (hole + 1) & mask;
        while (keys[next] != EMPTY) {
            int home = slot(keys[next], mask);
            // Move the entry back into the hole unless its home lies cyclically in (hole, next].
            boolean homeBetween = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next);
            if (!homeBetween) {
                keys[hole] = keys[next];
                values[hole] = values[next];
                hole = next;
            }
            next = (next + 1) & mask;
        }
        keys[hole] = EMPTY;
        size--;
    }

    private void rehash(int newCapacity) {
        long[] oldKeys = keys;
        long[] oldValues = values;
        allocate(newCapacity);
        int mask = newCapacity - 1;
        for (int i = 0; i < oldKeys.length; i++) {
            long key = oldKeys[i];
            if (key != EMPTY) {
                int index = slot(key, mask);
                while (keys[index] != EMPTY) {
                    index = (index + 1) & mask;
                }
                keys[index] = key;
                values[index] = oldValues[i];
            }
        }
    }

    private void allocate(int capacity) {
        keys = new long[capacity];
        Arrays.fill(keys, EMPTY);
        values = new long[capacity];
    }

    static int slot(long key, int mask) {
        // Ids differ mostly in their low bits and by small strides; mix so that runs do not cluster.
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & mask;
    }

    static void checkKey(long key) {
        if (key < 0) {
            throw new IllegalArgumentException("key " + key + " is negative; message ids are never negative");
        }
    }
}
