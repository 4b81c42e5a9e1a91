package io.sluice.client.internal;

import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;

/**
 * The values of a run of consecutive sequences, added in sequence order and removed in any order, most often
 * from the oldest end: a producer's unsettled messages, keyed by the sequences it gives them. A ring array
 * indexed by {@code sequence - oldest}, so adding, finding and removing cost no allocation and no tree walk
 * (a {@code TreeMap} here cost a node, a boxed key and a rebalance per message). The ring doubles when the span
 * from the oldest to the newest value outgrows it, up to {@code maxRingSlots}; beyond that, values at the old
 * end that are still kept move to a small sorted map, so one value that is never removed cannot make the ring
 * grow with every sequence after it. Removed slots in the middle wait until the oldest end passes them. Not
 * thread-safe.
 *
 * @param <T> the value kept per sequence
 */
public final class SequenceWindow<T> {
    private final int maxRingSlots;
    private Object[] slots;
    /** The sequence in {@code slots[head]}; values below it are in {@link #old}. */
    private long oldest;
    private int head;
    /** Slots from head on that are in the span (kept or removed). */
    private int span;
    /** Values kept, in the ring and in {@link #old}. */
    private int size;
    /** Values pushed out of a full ring, all below {@link #oldest}. */
    private final TreeMap<Long, T> old = new TreeMap<>();

    public SequenceWindow(int initialCapacity) {
        this(initialCapacity, Math.max(1 << 10, ringSlotsFor(initialCapacity) * 16));
    }

    /** With a ring of at most {@code maxRingSlots} (rounded up to a power of two). */
    public SequenceWindow(int initialCapacity, int maxRingSlots) {
        this.slots = new Object[ringSlotsFor(initialCapacity)];
        this.maxRingSlots = Math.max(slots.length, ringSlotsFor(maxRingSlots));
    }

    private static int ringSlotsFor(int capacity) {
        return Integer.highestOneBit(Math.max(2, capacity - 1)) << 1;
    }

    public int size() {
        return size;
    }

    public boolean isEmpty() {
        return size == 0;
    }

    /**
     * Keeps {@code value} under {@code sequence}, which must follow the newest sequence added (or, once the
     * window is empty, may be any sequence above it).
     */
    public void add(long sequence, T value) {
        if (value == null) {
            throw new NullPointerException("value");
        }
        if (size == 0) { // every slot is null already: removal nulls them
            oldest = sequence;
            head = 0;
            span = 0;
        } else if (sequence != oldest + span) {
            throw new IllegalArgumentException("sequence " + sequence + " does not follow " + (oldest + span - 1));
        }
        if (span == slots.length) {
            if (slots.length < maxRingSlots) {
                grow();
            } else {
                pushOutOldest();
            }
        }
        slots[(head + span) & (slots.length - 1)] = value;
        span++;
        size++;
    }

    /** The lowest sequence a value is kept under; undefined when {@link #isEmpty}. */
    public long oldestSequence() {
        return old.isEmpty() ? oldest : old.firstKey();
    }

    /** The value under {@code sequence}, or null. */
    @SuppressWarnings("unchecked")
    public T get(long sequence) {
        long offset = sequence - oldest;
        if (offset < 0) {
            return old.isEmpty() ? null : old.get(sequence);
        }
        if (offset >= span) {
            return null;
        }
        return (T) slots[(int) (head + offset) & (slots.length - 1)];
    }

    /** Removes and returns the value under {@code sequence}, or null if none is kept. */
    public T remove(long sequence) {
        if (sequence < oldest) {
            T value = old.isEmpty() ? null : old.remove(sequence);
            if (value != null) {
                size--;
            }
            return value;
        }
        T value = get(sequence);
        if (value != null) {
            slots[(int) (head + (sequence - oldest)) & (slots.length - 1)] = null;
            size--;
            advancePastRemoved();
        }
        return value;
    }

    /** Removes every value under {@code from..to} (inclusive), handing each to {@code removed} in order. */
    @SuppressWarnings("unchecked")
    public void removeRange(long from, long to, Consumer<? super T> removed) {
        if (!old.isEmpty() && from < oldest) {
            Map<Long, T> range = old.subMap(from, true, Math.min(to, oldest - 1), true);
            for (T value : range.values()) {
                size--;
                removed.accept(value);
            }
            range.clear();
        }
        // By offset from the oldest, which stays within the ring: a range ending at Long.MAX_VALUE stepped by sequence
        // past it to Long.MIN_VALUE, still not above the end, and spun the client's network thread for good.
        long firstOffset = Math.max(from, oldest) - oldest;
        long lastOffset = to < oldest ? -1 : Math.min(to - oldest, span - 1L); // to - oldest overflows for a range far below
        for (long offset = firstOffset; offset <= lastOffset; offset++) {
            int slot = (int) (head + offset) & (slots.length - 1);
            Object value = slots[slot];
            if (value != null) {
                slots[slot] = null;
                size--;
                removed.accept((T) value);
            }
        }
        advancePastRemoved();
    }

    /** Hands every kept value to {@code action}, oldest first. */
    @SuppressWarnings("unchecked")
    public void forEach(Consumer<? super T> action) {
        old.values().forEach(action);
        for (int i = 0; i < span; i++) {
            Object value = slots[(head + i) & (slots.length - 1)];
            if (value != null) {
                action.accept((T) value);
            }
        }
    }

    public void clear() {
        Arrays.fill(slots, null);
        old.clear();
        head = 0;
        span = 0;
        size = 0;
    }

    /** Slots in the ring now (for tests). */
    int ringSlots() {
        return slots.length;
    }

    private void advancePastRemoved() {
        while (span > 0 && slots[head] == null) {
            head = (head + 1) & (slots.length - 1);
            oldest++;
            span--;
        }
    }

    /** The ring is full and may not grow: its oldest slot leaves it, into {@link #old} if it holds a value. */
    @SuppressWarnings("unchecked")
    private void pushOutOldest() {
        Object value = slots[head];
        if (value != null) {
            old.put(oldest, (T) value);
            slots[head] = null;
        }
        head = (head + 1) & (slots.length - 1);
        oldest++;
        span--;
        advancePastRemoved();
    }

    private void grow() {
        Object[] bigger = new Object[slots.length * 2];
        for (int i = 0; i < span; i++) {
            bigger[i] = slots[(head + i) & (slots.length - 1)];
        }
        slots = bigger;
        head = 0;
    }
}
