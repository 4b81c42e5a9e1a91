package io.sluice.broker.cluster;

import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueManager;
import org.apache.ratis.io.MD5Hash;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftGroupMemberId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.util.MD5FileUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The Raft state machine of one data shard: applies each committed {@link ShardEntry} to this node's
 * queues ({@link ShardApplier}), in log order, on every node.
 *
 * <p>Snapshots (rule R4 of docs/replication.md): the queues' own stores are the state, so a snapshot is a
 * marker file naming the last applied term and index, written only once every store is durable through
 * what was applied; a restart replays the log after it, and the producer tables keep entries applied and
 * stored before the crash from being stored twice. The marker holds no data, so it cannot be sent to a
 * follower: {@link RaftSettings} turns snapshot installation off and the log is purged only below every
 * follower's commit index.
 *
 * <p>Threads: Ratis calls {@link #applyTransaction} and {@link #takeSnapshot} on its one state machine
 * updater thread of the group, and the leader events on its server threads; the latter only hand over to
 * {@link Events}, which must not block.
 */
final class ShardStateMachine extends BaseStateMachine {
    private static final Logger LOG = LoggerFactory.getLogger(ShardStateMachine.class);
    private static final long SNAPSHOT_DURABILITY_TIMEOUT_SECONDS = 60;

    /** What the node hears of leadership. */
    interface Events {
        /** The leader changed (to {@code leader}, or to none known: null). */
        void leaderChanged(RaftPeerId leader);

        /** This node became the leader and has committed its first entry: every earlier entry is committed. */
        void leaderReady();
    }

    private final SimpleStateMachineStorage storage = new SimpleStateMachineStorage();
    private final ShardApplier applier;
    private final QueueManager queues;
    private final int maxFrameBytes;
    private volatile Events events;

    ShardStateMachine(ShardApplier applier, QueueManager queues, int maxFrameBytes) {
        this.applier = applier;
        this.queues = queues;
        this.maxFrameBytes = maxFrameBytes;
    }

    void events(Events events) {
        this.events = events;
    }

    @Override
    public void initialize(RaftServer server, RaftGroupId groupId, RaftStorage raftStorage) throws IOException {
        super.initialize(server, groupId, raftStorage);
        storage.init(raftStorage);
        reinitialize();
    }

    @Override
    public void reinitialize() throws IOException {
        SingleFileSnapshotInfo snapshot = storage.loadLatestSnapshot();
        if (snapshot != null) {
            TermIndex last = snapshot.getTermIndex();
            updateLastAppliedTermIndex(last);
            LOG.info("Shard {}: the queues' stores hold every entry through index {} (term {}); replaying the log after it.",
                    getGroupId(), last.getIndex(), last.getTerm());
        }
    }

    @Override
    public SimpleStateMachineStorage getStateMachineStorage() {
        return storage;
    }

    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext transaction) {
        LogEntryProto entry = transaction.getLogEntry();
        TermIndex termIndex = TermIndex.valueOf(entry);
        CompletableFuture<Void> applied;
        try {
            // A copy: the entry's buffer is Ratis's, and the queues read it later, on their own threads.
            applied = applier.apply(ShardEntry.decode(entry.getStateMachineLogEntry().getLogData().toByteArray(), maxFrameBytes));
        } catch (RuntimeException e) {
            // Every node meets the same entry, so every node skips it alike; it never stops the shard.
            LOG.error("Shard {}: skipping log entry {} that this broker cannot apply: {}", getGroupId(), termIndex, e.getMessage());
            applied = CompletableFuture.completedFuture(null);
        }
        updateLastAppliedTermIndex(termIndex);
        return applied.thenApply(done -> Message.EMPTY);
    }

    /** Rule R4: the marker is written once every store is durable through what was applied. */
    @Override
    public long takeSnapshot() throws IOException {
        TermIndex last = getLastAppliedTermIndex();
        if (last == null || last.getIndex() < 0) {
            return -1;
        }
        try {
            for (BrokerQueue queue : queues.all()) {
                queue.store().whenDurable(queue.store().writtenIndex()).get(SNAPSHOT_DURABILITY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
                queue.store().whenAcksDurable(true).get(SNAPSHOT_DURABILITY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for the queues' stores to be durable through index " + last.getIndex(), e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IOException("the queues' stores are not durable through index " + last.getIndex() + ": " + e, e);
        }
        File marker = storage.getSnapshotFile(last.getTerm(), last.getIndex());
        Files.writeString(marker.toPath(), "Sluice shard " + getGroupId() + ": the queues' stores hold every entry through term "
                + last.getTerm() + " index " + last.getIndex() + ".\n", StandardCharsets.UTF_8);
        MD5Hash md5 = MD5FileUtil.computeAndSaveMd5ForFile(marker);
        storage.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(marker.toPath(), md5), last));
        return last.getIndex();
    }

    @Override
    public void notifyLeaderChanged(RaftGroupMemberId member, RaftPeerId newLeader) {
        Events listener = events;
        if (listener != null) {
            listener.leaderChanged(newLeader);
        }
    }

    @Override
    public void notifyLeaderReady() {
        Events listener = events;
        if (listener != null) {
            listener.leaderReady();
        }
    }
}
