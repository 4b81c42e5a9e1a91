package io.sluice.broker.queue;

import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The connections one pass of a queue's executor wrote to (confirms released, deliveries sent), each
 * once, so that the pass flushes each of them once at its end. Reused from pass to pass: a queue makes
 * a pass per frame, and a new identity set per pass was the largest share of what the broker allocated
 * per message. Few connections share a queue's pass as a rule, so membership is a scan of a small array;
 * past {@link #SCAN_LIMIT} entries an identity set made for that pass answers instead.
 *
 * <p>Confined to the queue's executor. A pass that begins while another is still using this list (a
 * flush that called back into the queue on the same thread) gets a list of its own from {@link #begin()},
 * so the outer pass's entries are never cleared under it.
 */
final class FlushList<T> {
    static final int SCAN_LIMIT = 8;

    private Object[] items = new Object[SCAN_LIMIT];
    private int size;
    private Set<T> members; // from the (SCAN_LIMIT + 1)th entry of a pass on
    private boolean inUse;

    /** This list, emptied, for a pass; a fresh one if a pass is still using this one. */
    FlushList<T> begin() {
        if (inUse) {
            FlushList<T> nested = new FlushList<>();
            nested.inUse = true;
            return nested;
        }
        clear();
        inUse = true;
        return this;
    }

    /** Notes {@code item} unless it is already noted in this pass (by identity). */
    void add(T item) {
        if (members != null) {
            if (members.add(item)) {
                append(item);
            }
            return;
        }
        for (int i = 0; i < size; i++) {
            if (items[i] == item) {
                return;
            }
        }
        append(item);
        if (size > SCAN_LIMIT) {
            members = Collections.newSetFromMap(new IdentityHashMap<>());
            for (int i = 0; i < size; i++) {
                members.add(item(i));
            }
        }
    }

    /** Hands every noted item to {@code flush}, in the order noted, and ends the pass. */
    void flushAll(Consumer<? super T> flush) {
        try {
            for (int i = 0; i < size; i++) {
                flush.accept(item(i));
            }
        } finally {
            clear();
            inUse = false;
        }
    }

    private void append(T item) {
        if (size == items.length) {
            items = Arrays.copyOf(items, size * 2);
        }
        items[size++] = item;
    }

    @SuppressWarnings("unchecked")
    private T item(int i) {
        return (T) items[i];
    }

    private void clear() {
        Arrays.fill(items, 0, size, null);
        size = 0;
        members = null;
    }
}
