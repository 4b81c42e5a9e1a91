package io.sluice.broker.cluster;

import org.apache.ratis.proto.RaftProtos.ServerRpcProto;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.server.DivisionInfo;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;

import org.apache.ratis.server.raftlog.RaftLog;
import org.apache.ratis.statemachine.SnapshotInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * What this node's Raft server knows of one shard's group (its <em>division</em>, in Ratis's words): its
 * role and term, its log's first, last, committed and applied indexes, and, while it leads, how far each
 * follower is. Every read answers -1, null or nothing while the division does not exist (before the
 * server started, after it closed) rather than failing.
 *
 * <p>Threads: thread-safe; reads Ratis's own state, which Ratis keeps consistent per field (two reads
 * may see different moments).
 */
final class ShardDivision {
    private static final Logger LOG = LoggerFactory.getLogger(ShardDivision.class);
    private final RaftServer server;
    private final RaftGroupId group;

    ShardDivision(RaftServer server, RaftGroupId group) {
        this.server = server;
        this.group = group;
    }

    /**
     * Rule R4, a crash inside a snapshot install: when this start finished an install that a crash interrupted
     * (ShardStateMachine's load, before Ratis opened its log), the queues hold the entries through the snapshot's
     * N while the Raft log still ends at this node's old last entry, below N. Ratis's log then purges its closed
     * segments only and keeps the open one, so the leader's entry N + 1 would not follow it ("gap between
     * entries") and this node would never catch up. What Ratis does after an install it drove itself is done
     * here: the log is reset to start after N. Nothing of it is lost: every entry through N is in the queues.
     */
    void dropLogBelowInstalledSnapshot(int nodeId) throws IOException {
        RaftServer.Division division = server.getDivision(group);
        SnapshotInfo snapshot = division.getStateMachine().getLatestSnapshot();
        RaftLog log = division.getRaftLog();
        TermIndex last = log.getLastEntryTermIndex();
        if (snapshot == null || last == null || last.getIndex() >= snapshot.getIndex()) {
            return;
        }
        LOG.info("Cluster node {}: the queues hold every entry through index {} (an installed snapshot) and the Raft log ends at {};"
                + " the log now starts after the snapshot.", nodeId, snapshot.getIndex(), last.getIndex());
        try {
            log.onSnapshotInstalled(snapshot.getIndex()).get(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while resetting the Raft log after the installed snapshot", e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IOException("resetting the Raft log to start after the installed snapshot at index " + snapshot.getIndex()
                    + " failed: " + e, e);
        }
    }

    /**
     * Closes the shard on this node (Ratis's server goes on serving no group): it no longer votes, leads or applies, as when
     * Ratis's updater stops on an entry this node cannot apply (rule R12); a restart opens it again. Blocks until Ratis's
     * updater has stopped, so never on a thread that work the updater waits for runs on.
     */
    void close() {
        try {
            server.getDivision(group).close();
        } catch (IOException | RuntimeException e) {
            LOG.warn("Closing the shard's division failed (it may be closed already): {}", e.toString());
        }
    }

    /** The division's state, or null before it exists or after it closed. */
    DivisionInfo info() {
        try {
            return server.getDivision(group).getInfo();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    long appliedIndex() {
        DivisionInfo info = info();
        return info == null ? -1 : info.getLastAppliedIndex();
    }

    long commitIndex() {
        try {
            return server.getDivision(group).getRaftLog().getLastCommittedIndex();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** The index of the last entry in the log, committed or not. */
    long lastLogIndex() {
        try {
            TermIndex last = server.getDivision(group).getRaftLog().getLastEntryTermIndex();
            return last == null ? -1 : last.getIndex();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** The index of the first entry still in the log (what is below it was purged after a snapshot). */
    long logStartIndex() {
        try {
            return server.getDivision(group).getRaftLog().getStartIndex();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    long term() {
        DivisionInfo info = info();
        return info == null ? -1 : info.getCurrentTerm();
    }

    /**
     * Each follower's progress as the leader sees it (what each acknowledged holding), by node id; empty unless
     * this node leads.
     */
    List<FollowerProgress> followers() {
        DivisionInfo info = info();
        if (info == null || !info.isLeader()) {
            return List.of();
        }
        // The three come from the leader's log appenders, one per follower, in the same order.
        List<ServerRpcProto> peers = info.getRoleInfoProto().getLeaderInfo().getFollowerInfoList();
        long[] match = info.getFollowerMatchIndices();
        long[] next = info.getFollowerNextIndices();
        if (match == null || next == null || peers.size() != match.length || peers.size() != next.length) {
            return List.of(); // the leadership changed between the reads, or the division closed (its leader state is gone)
        }
        long last = lastLogIndex();
        List<FollowerProgress> followers = new ArrayList<>(peers.size());
        for (int i = 0; i < peers.size(); i++) {
            String peer = peers.get(i).getId().getId().toStringUtf8();
            followers.add(new FollowerProgress(ClusterMember.nodeIdOf(peer), match[i], next[i], Math.max(0, last - match[i]),
                    peers.get(i).getLastRpcElapsedTimeMs()));
        }
        followers.sort(Comparator.comparingInt(FollowerProgress::nodeId));
        return followers;
    }
}
