package io.sluice.broker.cluster;

import io.sluice.broker.queue.ApplyHalt;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueManager;

import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * What a node does once it stops applying the log (rules R2 and R12 of docs/replication.md, {@link ApplyHalt}): it serves
 * no client (each is closed with NOT_LEADER and resends to the leader what was not confirmed, which deduplicates it), gives
 * back what its queues held for entries in flight, as a leader that lost its leadership does (R5), and closes the shard on
 * this node, so that it neither votes nor leads with a hole in its queues: the other nodes go on, and this one is a copy
 * less ("A follower that lags is a copy less") until it is started again, when it applies the log again from its last
 * marker. The shard is closed by Ratis's updater itself when the stop was thrown out of the state machine's apply.
 *
 * <p>Threads: told on whichever thread found the failure (a queue's executor, Ratis's updater); the work runs on a thread
 * of its own, since closing the shard waits for the updater, which may wait for those executors.
 */
final class HaltedShard implements ApplyHalt.Listener {
    private final int nodeId;
    private final ShardDivision division;
    private final QueueManager queues;
    private final Supplier<String> notLeader;
    private final Consumer<String> closeClients;

    HaltedShard(int nodeId, ShardDivision division, QueueManager queues, Supplier<String> notLeader, Consumer<String> closeClients) {
        this.nodeId = nodeId;
        this.division = division;
        this.queues = queues;
        this.notLeader = notLeader;
        this.closeClients = closeClients;
    }

    @Override
    public void stopped(String reason, boolean raftStopsItself) {
        Thread stopping = new Thread(() -> {
            closeClients.accept(notLeader.get());
            queues.all().forEach(BrokerQueue::leadershipLost);
            if (!raftStopsItself) {
                division.close();
            }
        }, "sluice-shard-stop-node-" + nodeId);
        stopping.setDaemon(true);
        stopping.start();
    }
}
