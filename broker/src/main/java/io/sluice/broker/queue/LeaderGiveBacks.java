package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.function.IntConsumer;
import java.util.function.LongPredicate;

/**
 * What a cluster leader gives back to its queue when entries it submitted may never commit (rules R5, R7 and R9 of
 * docs/replication.md): the acks of its consumers not applied yet, and what its purges and drop-oldest drops hold.
 * Each message is deliverable here again, as the new leader delivers it; if its entry commits after all, applying it
 * acknowledges (or drops) the message, as on every node.
 *
 * <p>A give-back reads no message: each id comes with the bytes its ack or drop took off the backlog, kept since then
 * ({@link IdBytes}). The sets it walks are emptied before the walk, so a read that threw (the queue's storage failed)
 * used to leave the ids after it in none of them: tracked or held, never delivered again here and never given back,
 * until a restart. A message whose record turns out to be damaged or unreadable when it is delivered again is handled
 * there, as any due message's.
 *
 * <p>Threads: the queue's executor.
 */
final class LeaderGiveBacks {
    private static final Logger LOG = LoggerFactory.getLogger(LeaderGiveBacks.class);

    private final String queue;
    private final IdSet tracked;
    private final DeliveryOrder order;
    private final Backlog backlog;
    private final AckBatch acks;
    private final LeaderHold hold;
    private final PublishPath publishPath;
    /** True if the message is acknowledged in the store (gone: nothing to give back). */
    private final LongPredicate acked;
    /** Counts messages made due again. */
    private final IntConsumer redelivered;
    private final Runnable dispatch;

    LeaderGiveBacks(String queue, IdSet tracked, DeliveryOrder order, Backlog backlog, AckBatch acks, LeaderHold hold,
                    PublishPath publishPath, LongPredicate acked, IntConsumer redelivered, Runnable dispatch) {
        this.queue = queue;
        this.tracked = tracked;
        this.order = order;
        this.backlog = backlog;
        this.acks = acks;
        this.hold = hold;
        this.publishPath = publishPath;
        this.acked = acked;
        this.redelivered = redelivered;
        this.dispatch = dispatch;
    }

    /** This node lost its leadership: everything it submitted and has not applied may never commit. */
    void leadershipLost() {
        publishPath.leadershipLost();
        IdBytes.Drained unapplied = acks.unapplied();
        long[] ids = unapplied.ids();
        for (int i = ids.length - 1; i >= 0; i--) { // due first, in id order
            if (acked.test(ids[i])) {
                tracked.remove(ids[i]);
                continue;
            }
            backlog.added(unapplied.bytes()[i]);
            order.dueFirst(ids[i]);
        }
        if (ids.length > 0) {
            redelivered.accept(ids.length);
            publishPath.updateFlow();
            dispatch.run();
        }
        LeaderHold.GivenBack held = hold.giveBackAll(); // rules R7, R9: the purges' and drops' entries may never commit either
        purgeGivenBack(held.purged());
        dropsGivenBack(held.dropped());
    }

    /** Rule R7: the entries of a purge that held {@code ranges} were not committed. */
    void purgeNotCommitted(List<IdRange> ranges) {
        purgeGivenBack(hold.giveBack(ranges));
    }

    /** Rule R9: the ACK entry of a drop of {@code id} was not committed. */
    void dropNotCommitted(long id) {
        int bytes = hold.giveBackDrop(id);
        if (bytes >= 0) {
            dropsGivenBack(IdBytes.Drained.of(id, bytes));
        }
    }

    /** {@code ranges} (ascending) are no longer held by a purge: back where the order finds them, in id order. */
    private void purgeGivenBack(List<IdRange> ranges) {
        order.givenBack(ranges);
        if (!ranges.isEmpty()) {
            LOG.info("Queue '{}': a purge was not committed; the messages it held ({} id ranges) stay in the queue.", queue,
                    ranges.size());
            dispatch.run();
        }
    }

    /**
     * {@code dropped} (ascending) are no longer held as drops: back in the backlog and where the order finds them, untracked
     * as a purge's, so that an entry that commits after all drops them when applied, as on every node.
     */
    private void dropsGivenBack(IdBytes.Drained dropped) {
        long[] ids = dropped.ids();
        int back = 0;
        for (int i = ids.length - 1; i >= 0; i--) {
            if (acked.test(ids[i])) {
                backlog.dropsApplied(1); // gone from the store meanwhile: nothing to count again
                continue;
            }
            backlog.dropGivenBack(dropped.bytes()[i]);
            order.givenBack(ids[i]);
            back++;
        }
        if (back > 0) {
            LOG.info("Queue '{}': {} drop-oldest drops were not committed; those messages stay in the queue.", queue, back);
            publishPath.updateFlow();
            dispatch.run();
        }
    }
}
