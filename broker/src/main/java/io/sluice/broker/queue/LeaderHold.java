package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongConsumer;

/**
 * Rules R7 and R9 of docs/replication.md, on a cluster leader: the ids it decided to remove, by a purge
 * ({@link QueuePurge#holdWaiting}) or by a {@code drop-oldest} drop ({@link DropOldest}), whose ACK entries this node
 * has not applied yet. The leader changes its store only when it applies them, as every node does, so that a removal it
 * cannot commit leaves its store as the others' (the same rule as R5 for a consumer's acks). Meanwhile the held ids are
 * delivered to no one and chosen by no other purge or drop: they are in no ready list and not tracked, and the reader
 * passes them ({@link DeliveryOrder}). Applying an entry ends the hold of its ids; if the entries are not committed
 * (Raft refused them, or this node stopped leading) they are given back and are deliverable here again.
 *
 * <p>A purge's ids are held as the ranges it picked ({@link RangeSet}), never one by one: a purge of millions of
 * messages holds a few ranges, and whatever it costs here follows them. The drops are held apart, one by one (each
 * makes room for one publish, and the log's bound on what is uncommitted bounds them), because the queue counts them
 * differently: a drop is off the backlog (bytes and messages) from the moment it is chosen, as on a single broker, so
 * the publish it made room for is admitted against the backlog it leaves; a purge's ids stay in the backlog until applied.
 * A purge never picks a held drop, nor a drop a purge's id, so the two never overlap.
 *
 * <p>Threads: confined to the queue's executor.
 */
final class LeaderHold {
    private final RangeSet purged = new RangeSet();
    /** The drops held, each with the bytes it took off the backlog, which it counts again if given back. */
    private final IdBytes drops = new IdBytes();

    boolean isEmpty() {
        return drops.size() == 0 && purged.isEmpty();
    }

    /** At least how many messages are held (the purges' ranges may span acknowledged ids too): a bound for a walk that passes them. */
    long size() {
        return purged.span() + drops.size();
    }

    boolean holds(long id) {
        return (drops.size() > 0 && drops.contains(id)) || purged.contains(id);
    }

    /** A purge picked {@code ranges}, none of which is held already. */
    void hold(List<IdRange> ranges) {
        for (IdRange range : ranges) {
            purged.add(range.from(), range.to());
        }
    }

    /** The parts of {@code from..to} no purge holds, added to {@code out} in ascending order: what a new purge may pick. */
    void addNotPurged(long from, long to, List<IdRange> out) {
        purged.addOutside(from, to, out);
    }

    /** A {@code drop-oldest} drop chose {@code id}, a message of {@code messageBytes} (headers plus payload). */
    void holdDrop(long id, int messageBytes) {
        drops.add(id, messageBytes);
    }

    /** Hands {@code action} every drop held, in no particular order. */
    void forEachDrop(LongConsumer action) {
        drops.forEach(action);
    }

    /**
     * An ACK entry was applied here: none of its ids is held any more. Returns the drops among them, which the caller
     * acknowledges in the store (a purge's ids are acknowledged as any replicated ack's, being untracked).
     */
    long[] applied(List<IdRange> ranges) {
        if (isEmpty()) {
            return new long[0];
        }
        for (IdRange range : ranges) {
            purged.remove(range.from(), range.to(), null);
        }
        if (drops.size() == 0) {
            return new long[0];
        }
        // Whichever is smaller is walked: the entry's ids (a consumer's ack names a few) or the held drops.
        long width = 0;
        for (IdRange range : ranges) {
            width += range.to() - range.from() + 1;
            if (width <= 0 || width > drops.size()) {
                return appliedByDrops(ranges);
            }
        }
        long[] out = new long[(int) width];
        int n = 0;
        for (IdRange range : ranges) {
            for (long id = range.from(); ; id++) { // to may be Long.MAX_VALUE: the test ends the loop, not id <= to
                if (drops.contains(id)) {
                    drops.remove(id);
                    out[n++] = id;
                }
                if (id == range.to()) {
                    break;
                }
            }
        }
        return Arrays.copyOf(out, n);
    }

    private long[] appliedByDrops(List<IdRange> ranges) {
        IdBytes.Drained dropped = drops.drain();
        long[] out = new long[dropped.ids().length];
        int n = 0;
        for (int i = 0; i < dropped.ids().length; i++) {
            long id = dropped.ids()[i];
            if (inAny(ranges, id)) {
                out[n++] = id;
            } else {
                drops.add(id, dropped.bytes()[i]);
            }
        }
        return Arrays.copyOf(out, n);
    }

    /**
     * The parts of a purge's {@code ranges} still held, in ascending order, which are no longer held: their entries were
     * not committed.
     */
    List<IdRange> giveBack(List<IdRange> ranges) {
        List<IdRange> out = new ArrayList<>();
        for (IdRange range : ranges) {
            purged.remove(range.from(), range.to(), out);
        }
        return out;
    }

    /**
     * {@code id} is no longer held as a drop: its entry was not committed. Returns the bytes it took off the backlog, or -1
     * if it was not held (its entry was applied, or the node's leadership ended first and gave it back).
     */
    int giveBackDrop(long id) {
        return drops.size() == 0 ? -1 : drops.remove(id);
    }

    /**
     * This node stopped leading, so none of the entries may commit: every id held, none held any more. Returns the purges'
     * ranges and the drops (with the bytes each took off the backlog) apart, each in ascending order.
     */
    GivenBack giveBackAll() {
        IdBytes.Drained dropped = drops.size() == 0 ? IdBytes.Drained.NONE : drops.drain();
        return new GivenBack(purged.isEmpty() ? List.of() : purged.drain(), dropped);
    }

    /** What {@link #giveBackAll} gave back: the purges' ranges, and the drops. */
    record GivenBack(List<IdRange> purged, IdBytes.Drained dropped) {
    }

    private static boolean inAny(List<IdRange> ranges, long id) {
        for (IdRange range : ranges) {
            if (range.contains(id)) {
                return true;
            }
        }
        return false;
    }
}
