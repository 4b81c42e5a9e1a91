package io.sluice.broker.cluster;

import io.sluice.broker.queue.ApplyHalt;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueManager;
import io.sluice.storage.files.AtomicFiles;
import org.apache.ratis.io.MD5Hash;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
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
import org.apache.ratis.util.LifeCycle;
import org.apache.ratis.util.MD5FileUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.function.Function;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The Raft state machine of one data shard: applies each committed {@link ShardEntry} (or {@link EntryBatch} of
 * them) to this node's queues ({@link ShardApplier}), in log order, on every node.
 *
 * <p>Snapshots (rule R4 of docs/replication.md): the queues' own stores are the state. A snapshot at applied
 * index N waits for every store to be durable through what was applied, then (when snapshots are served,
 * {@link ShardSnapshots}) copies every queue and its settings as of N, and last writes a marker file naming N
 * in Ratis's state machine directory. A restart replays the log after the marker into the node's own stores;
 * replaying an entry the stores already hold changes nothing (rule R4 lists why for each kind): a queue skips the
 * PUBLISH entries its records say it holds (R4a, {@code queue.AppliedPublishes}). A follower
 * behind the leader's purged log is told so by Ratis (notify mode, {@link #notifyInstallSnapshotFromLeader}):
 * it fetches the leader's snapshot ({@link SnapshotInstaller}), and Ratis then pauses this state machine and
 * calls {@link #reinitialize}, which swaps the snapshot's queues in and writes its marker.
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
    private final ApplyBudget applyBudget;
    private final QueueManager queues;
    /** This node's snapshots of its queues, or null when snapshots are markers only (a node without a snapshot-port). */
    private final ShardSnapshots snapshots;
    private final SnapshotInstaller installer;
    /** A peer's {@link SnapshotServer} host:port, from the shard's members ({@link ClusterMembers}); null if unknown. */
    private final Function<RaftPeerId, String> snapshotAddresses;
    private volatile Events events;
    private final ShardCounters counters;
    /**
     * Rule R12: a leader raising the entry level asks each node, over Raft, the level its broker supports
     * ({@link EntryLevelControl#QUERY}); nothing else is asked.
     */
    @Override
    public CompletableFuture<Message> query(Message request) {
        if (request.getContent().toString(StandardCharsets.UTF_8).equals(EntryLevelControl.QUERY)) {
            return CompletableFuture.completedFuture(Message.valueOf(Integer.toString(applier.supportedLevel())));
        }
        return CompletableFuture.failedFuture(new IllegalArgumentException("a shard answers no query but "
                + EntryLevelControl.QUERY));
    }

    /** Whether this node still applies the log (rules R2, R12): once stopped, nothing more is applied nor marked. */
    private final ApplyHalt halt;

    ShardStateMachine(ShardApplier applier, ApplyBudget applyBudget, QueueManager queues, ShardSnapshots snapshots,
                      SnapshotInstaller installer, Function<RaftPeerId, String> snapshotAddresses, ShardCounters counters) {
        this.applier = applier;
        this.applyBudget = applyBudget;
        this.counters = counters;
        this.queues = queues;
        this.snapshots = snapshots;
        this.installer = installer;
        this.snapshotAddresses = snapshotAddresses;
        this.halt = queues.applyHalt();
    }

    void events(Events events) {
        this.events = events;
    }

    @Override
    public void initialize(RaftServer server, RaftGroupId groupId, RaftStorage raftStorage) throws IOException {
        super.initialize(server, groupId, raftStorage);
        storage.init(raftStorage);
        load();
        getLifeCycle().transition(LifeCycle.State.STARTING);
        getLifeCycle().transition(LifeCycle.State.RUNNING);
    }

    /** Ratis pauses the state machine before it reloads it after a snapshot install ({@link #reinitialize}). */
    @Override
    public void pause() {
        if (getLifeCycleState() == LifeCycle.State.RUNNING) {
            getLifeCycle().transition(LifeCycle.State.PAUSING);
            getLifeCycle().transition(LifeCycle.State.PAUSED);
        }
    }

    /** After a snapshot install, on the state machine thread: swaps the fetched snapshot in, then runs again. */
    @Override
    public void reinitialize() throws IOException {
        load();
        if (getLifeCycleState() == LifeCycle.State.PAUSED) {
            getLifeCycle().transition(LifeCycle.State.STARTING);
            getLifeCycle().transition(LifeCycle.State.RUNNING);
        }
    }

    /**
     * Finishes a snapshot install that was fetched (or interrupted by a crash after its fetch), then takes the
     * applied index from the newest marker.
     */
    private void load() throws IOException {
        if (installer != null) {
            installer.installPending((pending, installedLevel, installedSettings) -> {
                try {
                    applier.checkSnapshot(installedLevel, installedSettings, pending.getIndex());
                } catch (EntryLevels.EntryTooNew | ClusterSettings.Mismatch e) {
                    // Rules R12, R2: refused before the swap, so this node's store is as it was; thrown out of the reload
                    // (or the start), which stops Ratis's updater, as at an entry.
                    halt.stopInApply(haltCode(e), e.getMessage());
                    throw e;
                }
            }, (installed, installedLevel, installedSettings) -> {
                applier.installedLevel(installedLevel, installed.getIndex());
                applier.installedSettings(installedSettings, installed.getIndex());
                // A snapshot of its own at once (links, and copies of what is not sealed): a follower that falls behind
                // this node, should it lead next, is not left waiting for the next snapshot to catch up from.
                snapshots.take(installed);
                writeMarker(installed);
            });
        }
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

    /**
     * Applies one committed entry, unless this node stopped applying the log (rule R2: a queue's store refused an entry
     * here): then nothing more is applied nor counted applied, while the shard is closed on this node; its restart
     * applies the log again from the last marker.
     */
    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext transaction) {
        if (halt.halted()) {
            return CompletableFuture.completedFuture(Message.EMPTY);
        }
        LogEntryProto entry = transaction.getLogEntry();
        TermIndex termIndex = TermIndex.valueOf(entry);
        int size = entry.getStateMachineLogEntry().getLogData().size();
        try {
            applyBudget.acquire(size);
        } catch (InterruptedException e) {
            // Ratis stops its updater (the division closes) by interrupting it: nothing of this entry was applied.
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted before applying log entry " + termIndex.getIndex(), e);
        }
        CompletableFuture<Void> applied;
        try {
            // A copy: the entry's buffer is Ratis's, and the queues read it later, on their own threads.
            byte[] data = entry.getStateMachineLogEntry().getLogData().toByteArray();
            applied = applier.applyLogEntry(data, termIndex.getIndex());
        } catch (EntryLevels.EntryTooNew | EntryNotStorable | EntryNotApplied | ClusterSettings.Mismatch
                 | java.io.UncheckedIOException e) { // the last: the level's or the settings' file could not be written. Rules
            // R12 and R2 (an entry this node cannot read, a message its store cannot hold, an entry its store refused, the
            // cluster's settings this node does not share): thrown out of applyTransaction, Ratis's updater stops (its EXCEPTION
            // state) and closes this node's division before it counts the entry applied, so nothing after it is applied and
            // no snapshot covers it. Unless the node stopped already: the division is being closed, which waits for the
            // updater to reach the commit index, and an updater stopped by a throw would never get there.
            applyBudget.release(size);
            if (halt.stopInApply(haltCode(e), e.getMessage())) {
                throw e;
            }
            return CompletableFuture.completedFuture(Message.EMPTY);
        } catch (RuntimeException | Error e) {
            applyBudget.release(size);
            throw e;
        }
        applied.whenComplete((done, failure) -> applyBudget.release(size));
        counters.applied(size);
        updateLastAppliedTermIndex(termIndex);
        return applied.thenApply(done -> Message.EMPTY);
    }

    /** Bytes of log entries handed to the queues and not applied by them yet, for the status page and its test. */
    long applyingBytes() {
        return applyBudget.inFlightBytes();
    }

    /**
     * Rule R4: the marker is written once every store is durable through what was applied. Ratis calls this once the work
     * of every entry applied is done, so a node that stopped applying (rule R2) knows it by then: it writes no marker
     * past what it applied, nor does a node one of whose stores failed (what it applied there may not be on disk): that
     * stops it too.
     */
    @Override
    public long takeSnapshot() throws IOException {
        TermIndex last = getLastAppliedTermIndex();
        if (last == null || last.getIndex() < 0) {
            return -1;
        }
        refuseIfHalted(last);
        try {
            for (BrokerQueue queue : queues.all()) {
                queue.store().whenDurable(queue.store().writtenIndex()).get(SNAPSHOT_DURABILITY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
                queue.store().whenAcksDurable(true).get(SNAPSHOT_DURABILITY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for the queues' stores to be durable through index " + last.getIndex(), e);
        } catch (ExecutionException | TimeoutException e) {
            stopIfAStoreFailed(last);
            throw new IOException("the queues' stores are not durable through index " + last.getIndex() + ": " + e, e);
        }
        stopIfAStoreFailed(last);
        refuseIfHalted(last);
        if (snapshots != null) {
            try {
                snapshots.take(last);
            } catch (RuntimeException e) {
                // Ratis's updater catches only an IOException here: anything else would stop the shard on this node.
                throw new IOException("the snapshot through index " + last.getIndex() + " failed: " + e, e);
            }
        }
        writeMarker(last);
        return last.getIndex();
    }

    /**
     * The marker naming {@code last}: the queues' stores hold every entry through it (rule R4). Forced before the
     * producer tables are told, because they then forget producers whose entries only the marker keeps from being
     * replayed: a marker a machine crash took back would have the node replay them.
     */
    private void writeMarker(TermIndex last) throws IOException {
        File marker = storage.getSnapshotFile(last.getTerm(), last.getIndex());
        Files.writeString(marker.toPath(), "Sluice shard " + getGroupId() + ": the queues' stores hold every entry through term "
                + last.getTerm() + " index " + last.getIndex() + ".\n", StandardCharsets.UTF_8);
        MD5Hash md5 = MD5FileUtil.computeAndSaveMd5ForFile(marker);
        for (File written : new File[] {marker, MD5FileUtil.getDigestFileForFile(marker)}) {
            try (FileChannel channel = FileChannel.open(written.toPath(), StandardOpenOption.READ)) {
                channel.force(true);
            }
        }
        AtomicFiles.fsyncDirectory(marker.toPath().getParent());
        storage.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(marker.toPath(), md5), last));
        queues.appliedEntriesMarked();
    }

    /**
     * Ratis, on a follower whose log ends before the leader's first entry: fetch the leader's snapshot holding
     * at least the entry before that one. Completes with the snapshot's last entry once it is the pending
     * install; Ratis then pauses this state machine and reloads it ({@link #reinitialize}). Null: none to be had
     * yet (the leader has no snapshot server, or no snapshot that far).
     */
    @Override
    public CompletableFuture<TermIndex> notifyInstallSnapshotFromLeader(RoleInfoProto roleInfo, TermIndex firstTermIndexInLog) {
        RaftPeerId leader = RaftPeerId.valueOf(roleInfo.getFollowerInfo().getLeaderInfo().getId().getId());
        String address = snapshotAddresses.apply(leader);
        if (installer == null || address == null) {
            LOG.error("Shard {}: the leader {} has purged its log up to index {}, which this node has not applied, and this node "
                    + "cannot fetch a snapshot (snapshot-port missing); it cannot catch up.", getGroupId(), leader, firstTermIndexInLog);
            return CompletableFuture.completedFuture(null);
        }
        LOG.info("Shard {}: the leader's log starts at {}, after this node's; fetching the leader's snapshot from {}.", getGroupId(),
                firstTermIndexInLog, address);
        return installer.fetch(address, firstTermIndexInLog.getIndex() - 1);
    }

    /** A store that failed (a force, a mapped write) holds what was applied to it in memory only: the node stops (R2). */
    private void stopIfAStoreFailed(TermIndex last) {
        for (BrokerQueue queue : queues.all()) {
            if (queue.store().failure() != null && !queue.isClosed()) {
                halt.failed("keeping queue '" + queue.name() + "' durable through log entry " + last.getIndex(), queue.store().failure());
            }
        }
    }

    private void refuseIfHalted(TermIndex last) throws IOException {
        if (halt.halted()) {
            throw new IOException("no snapshot through index " + last.getIndex() + ": this node stopped applying the log ("
                    + halt.reason() + ")");
        }
    }

    /** Why this node stopped applying the log (an entry it cannot read, R12, or cannot apply here, R2), or null. */
    String halted() {
        return halt.reason();
    }

    /** The code {@link #halted} is reported under, or null. */
    String haltedCode() {
        return halt.code();
    }

    /** The code a stop for {@code cause}, thrown out of an apply or a snapshot's install, is reported under. */
    private static String haltCode(RuntimeException cause) {
        if (cause instanceof EntryLevels.EntryTooNew) {
            return ApplyHalt.ENTRY_TOO_NEW;
        }
        if (cause instanceof ClusterSettings.Mismatch) {
            return ApplyHalt.SETTINGS_MISMATCH;
        }
        return cause instanceof EntryNotStorable ? ApplyHalt.ENTRY_NOT_STORABLE : ApplyHalt.STORE_FAILED;
    }

    @Override
    public void close() {
        if (installer != null) {
            installer.close();
        }
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
