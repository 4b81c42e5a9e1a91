package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;

import java.util.Arrays;
import java.util.List;

/**
 * Rule R7 of docs/replication.md, on a cluster leader: the ids a purge picked ({@link QueuePurge#holdWaiting}) whose ACK
 * entries this node has not applied yet. The leader changes its store only when it applies them, as every node does, so
 * that a purge it cannot commit leaves its store as the others' (the same rule as R5 for a consumer's acks). Meanwhile the
 * held ids are delivered to no one: they are in no ready list and not tracked, and the reader passes them
 * ({@link DeliveryOrder}). Applying the entry acknowledges them like any replicated ack (they are untracked) and ends the
 * hold; if the entries are not committed (Raft refused them, or this node stopped leading) they are given back and are
 * deliverable here again.
 *
 * <p>Threads: confined to the queue's executor.
 */
final class PurgeHold {
    private final IdSet held = new IdSet();

    /** The held ids, which {@link DeliveryOrder} skips; read there only. */
    IdSet ids() {
        return held;
    }

    boolean holds(long id) {
        return held.size() > 0 && held.contains(id);
    }

    void hold(long id) {
        held.add(id);
    }

    /** An ACK entry was applied here: its ids are acknowledged in the store now, so none of them is held any more. */
    void applied(List<IdRange> ranges) {
        if (held.size() == 0) {
            return;
        }
        for (IdRange range : ranges) {
            for (long id = range.from(); id <= range.to() && held.size() > 0; id++) {
                held.remove(id);
            }
        }
    }

    /** The ids of {@code ranges} still held, in ascending order, which are no longer held: their entries were not committed. */
    long[] giveBack(List<IdRange> ranges) {
        long[] out = new long[held.size()];
        int n = 0;
        for (IdRange range : ranges) {
            for (long id = range.from(); id <= range.to() && n < out.length; id++) {
                if (held.contains(id)) {
                    held.remove(id);
                    out[n++] = id;
                }
            }
        }
        return Arrays.copyOf(out, n);
    }

    /** Every id held, in ascending order, none held any more: this node stopped leading, so none of the entries may commit. */
    long[] giveBackAll() {
        long[] all = held.size() == 0 ? new long[0] : held.drain();
        Arrays.sort(all);
        return all;
    }
}
