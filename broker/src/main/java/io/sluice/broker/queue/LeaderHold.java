package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;

import java.util.Arrays;
import java.util.List;

/**
 * Rules R7 and R9 of docs/replication.md, on a cluster leader: the ids it decided to remove, by a purge
 * ({@link QueuePurge#holdWaiting}) or by a {@code drop-oldest} drop ({@link DropOldest}), whose ACK entries this node
 * has not applied yet. The leader changes its store only when it applies them, as every node does, so that a removal it
 * cannot commit leaves its store as the others' (the same rule as R5 for a consumer's acks). Meanwhile the held ids are
 * delivered to no one and chosen by no other purge or drop: they are in no ready list and not tracked, and the reader
 * passes them ({@link DeliveryOrder}). Applying an entry ends the hold of its ids; if the entries are not committed
 * (Raft refused them, or this node stopped leading) they are given back and are deliverable here again.
 *
 * <p>The drops are held apart from the purges' ids because the queue counts them differently: a drop is off the
 * backlog (bytes and messages) from the moment it is chosen, as on a single broker, so the publish it made room for
 * is admitted against the backlog it leaves; a purge's ids stay in the backlog until applied.
 *
 * <p>Threads: confined to the queue's executor.
 */
final class LeaderHold {
    private final IdSet held = new IdSet();
    /** The drops among {@link #held}. */
    private final IdSet drops = new IdSet();

    /** The held ids, which {@link DeliveryOrder} skips; read there only. */
    IdSet ids() {
        return held;
    }

    int size() {
        return held.size();
    }

    boolean holds(long id) {
        return held.size() > 0 && held.contains(id);
    }

    /** A purge picked {@code id}. */
    void hold(long id) {
        held.add(id);
    }

    /** A {@code drop-oldest} drop chose {@code id}. */
    void holdDrop(long id) {
        held.add(id);
        drops.add(id);
    }

    /**
     * An ACK entry was applied here: none of its ids is held any more. Returns the drops among them, which the caller
     * acknowledges in the store (a purge's ids are acknowledged as any replicated ack's, being untracked).
     */
    long[] applied(List<IdRange> ranges) {
        if (held.size() == 0) {
            return new long[0];
        }
        long[] out = new long[drops.size()];
        int n = 0;
        for (IdRange range : ranges) {
            for (long id = range.from(); id <= range.to() && held.size() > 0; id++) {
                if (held.contains(id)) {
                    held.remove(id);
                    if (drops.size() > 0 && drops.contains(id)) {
                        drops.remove(id);
                        out[n++] = id;
                    }
                }
            }
        }
        return Arrays.copyOf(out, n);
    }

    /**
     * The ids of a purge's {@code ranges} still held, in ascending order, which are no longer held: their entries were
     * not committed. A drop is never among a purge's ids; one held since in their span is left to its own entry.
     */
    long[] giveBack(List<IdRange> ranges) {
        long[] out = new long[held.size()];
        int n = 0;
        for (IdRange range : ranges) {
            for (long id = range.from(); id <= range.to() && n < out.length; id++) {
                if (held.contains(id) && (drops.size() == 0 || !drops.contains(id))) {
                    held.remove(id);
                    out[n++] = id;
                }
            }
        }
        return Arrays.copyOf(out, n);
    }

    /** True if {@code id} was held as a drop, which it no longer is: its entry was not committed. */
    boolean giveBackDrop(long id) {
        if (drops.size() == 0 || !drops.contains(id)) {
            return false;
        }
        drops.remove(id);
        held.remove(id);
        return true;
    }

    /**
     * This node stopped leading, so none of the entries may commit: every id held, none held any more. Returns the drops
     * and the purges' ids apart, each in ascending order.
     */
    GivenBack giveBackAll() {
        long[] dropped = drops.size() == 0 ? new long[0] : drops.drain();
        for (long id : dropped) {
            held.remove(id);
        }
        long[] purged = held.size() == 0 ? new long[0] : held.drain();
        Arrays.sort(dropped);
        Arrays.sort(purged);
        return new GivenBack(purged, dropped);
    }

    /** What {@link #giveBackAll} gave back: a purge's ids, and the drops. */
    record GivenBack(long[] purged, long[] dropped) {
    }
}
