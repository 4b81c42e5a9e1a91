package io.sluice.broker.cluster;

import org.apache.ratis.proto.RaftProtos.ServerRpcProto;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.server.DivisionInfo;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

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
    private final RaftServer server;
    private final RaftGroupId group;

    ShardDivision(RaftServer server, RaftGroupId group) {
        this.server = server;
        this.group = group;
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
        if (peers.size() != match.length || peers.size() != next.length) {
            return List.of(); // the leadership changed between the reads
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
