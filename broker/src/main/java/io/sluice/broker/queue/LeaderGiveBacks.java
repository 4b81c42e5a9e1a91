package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import io.sluice.storage.StoredMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.function.IntConsumer;
import java.util.function.LongFunction;

/**
 * What a cluster leader gives back to its queue when entries it submitted may never commit (rules R5, R7 and R9 of
 * docs/replication.md): the acks of its consumers not applied yet, and what its purges and drop-oldest drops hold.
 * Each message is deliverable here again, as the new leader delivers it; if its entry commits after all, applying it
 * acknowledges (or drops) the message, as on every node.
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
    /** The message if it is still stored and unacknowledged, else null. */
    private final LongFunction<StoredMessage> unacked;
    /** Counts messages made due again. */
    private final IntConsumer redelivered;
    private final Runnable dispatch;

    LeaderGiveBacks(String queue, IdSet tracked, DeliveryOrder order, Backlog backlog, AckBatch acks, LeaderHold hold,
                    PublishPath publishPath, LongFunction<StoredMessage> unacked, IntConsumer redelivered, Runnable dispatch) {
        this.queue = queue;
        this.tracked = tracked;
        this.order = order;
        this.backlog = backlog;
        this.acks = acks;
        this.hold = hold;
        this.publishPath = publishPath;
        this.unacked = unacked;
        this.redelivered = redelivered;
        this.dispatch = dispatch;
    }

    /** This node lost its leadership: everything it submitted and has not applied may never commit. */
    void leadershipLost() {
        publishPath.leadershipLost();
        long[] ids = acks.unapplied();
        for (int i = ids.length - 1; i >= 0; i--) {
            StoredMessage m = unacked.apply(ids[i]);
            if (m == null) {
                tracked.remove(ids[i]);
                continue;
            }
            backlog.added(m.headersLength() + m.payloadLength());
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
        if (hold.giveBackDrop(id)) {
            dropsGivenBack(new long[] {id});
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
     * {@code ids} (ascending) are no longer held as drops: back in the backlog and where the order finds them, untracked
     * as a purge's, so that an entry that commits after all drops them when applied, as on every node.
     */
    private void dropsGivenBack(long[] ids) {
        int back = 0;
        for (int i = ids.length - 1; i >= 0; i--) {
            StoredMessage m = unacked.apply(ids[i]);
            if (m == null) {
                backlog.dropsApplied(1); // gone from the store meanwhile: nothing to count again
                continue;
            }
            backlog.dropGivenBack(m.headersLength() + m.payloadLength());
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
