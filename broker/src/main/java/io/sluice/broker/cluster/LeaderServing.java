package io.sluice.broker.cluster;

import io.sluice.protocol.LeaderHint;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.DivisionInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Whether this node serves clients, and what it answers them when it does not (docs/replication.md, "Clients"):
 * a node serves only while it is the shard's leader, is ready (it committed an entry of its term, so every
 * earlier entry is committed), has applied what was committed when it became ready, and (rule R12) has applied
 * a new cluster's level entry. Otherwise {@link #notLeader} is the NOT_LEADER sentence, naming the leader's
 * client address when that leader is worth connecting to (rule S2: not a leader that went silent).
 *
 * <p>Threads: thread-safe. Its state is two volatile fields written by Ratis's notification threads
 * ({@link #leaderChanged}, {@link #leaderReady}, which is also run by a connection's event loop that finds
 * the notification late) and one written by whichever thread asks; every value written is a whole
 * decision, so a reader sees an old answer or a new one, never a mix.
 */
final class LeaderServing {
    private static final Logger LOG = LoggerFactory.getLogger(LeaderServing.class);

    private final int nodeId;
    private final RaftPeerId self;
    private final ShardDivision division;
    private final ClusterMembers members;
    /** Rule R12: why this node stopped applying the log, or null. */
    private final Supplier<String> halted;
    /** True once the Raft server started and this node has not closed it: a shard missing then was shut down. */
    private final BooleanSupplier startedAndOpen;
    /** Rule R12: finalizes a new cluster's entry level once this node leads; completes when its entry is applied. */
    private final Supplier<CompletableFuture<Void>> finalizeLevel;
    /**
     * A follower that has heard nothing from its leader for this long no longer names it: Ratis itself then
     * treats the leader as gone and grants votes against it (its minimum election timeout).
     */
    private final long leaderSilenceMs;
    private final long electionTimeoutMaxMs;

    /**
     * The commit index when this node last became a ready leader; it serves once it has applied that far.
     * {@link Long#MAX_VALUE} while it is no ready leader.
     */
    private volatile long servingFromIndex = Long.MAX_VALUE;
    /** Rule R12: a new cluster's level entry, applied before its leader serves (so its first HELLO_OK sees the level). */
    private volatile CompletableFuture<Void> levelFinalized = CompletableFuture.completedFuture(null);
    /**
     * The leader (and term) this follower last found silent for {@link #leaderSilenceMs} (rule S2): not named
     * again in that term, even though the silence ends when this node grants a candidate's (pre-)vote, which
     * Ratis counts as hearing from the cluster. A new term, a new leader, a commit index it moved (only the
     * leader's appends move it), or a maximum election timeout since it was last found silent (time enough for
     * the candidate it voted for to win; a leader that is alive after that was only slow) ends it.
     */
    private volatile SilentLeader silentLeader;

    private record SilentLeader(RaftPeerId leader, long term, long commitIndex, long foundAtNanos) {
    }

    LeaderServing(int nodeId, RaftPeerId self, ShardDivision division, ClusterMembers members, Supplier<String> halted,
                  BooleanSupplier startedAndOpen, Supplier<CompletableFuture<Void>> finalizeLevel, long leaderSilenceMs,
                  long electionTimeoutMaxMs) {
        this.nodeId = nodeId;
        this.self = self;
        this.division = division;
        this.members = members;
        this.halted = halted;
        this.startedAndOpen = startedAndOpen;
        this.finalizeLevel = finalizeLevel;
        this.leaderSilenceMs = leaderSilenceMs;
        this.electionTimeoutMaxMs = electionTimeoutMaxMs;
    }

    /** Null while this node serves clients; otherwise the NOT_LEADER sentence ({@link LeaderHint}), naming the leader if it is worth it. */
    String notLeader() {
        DivisionInfo info = division.info();
        if (halted.get() != null) {
            return LeaderHint.format(null, "node " + nodeId + " stopped applying the log (GET /api/cluster on it says why)");
        }
        if (notAMember(info)) {
            // Removed (Ratis shut its shard down), or joining and not added yet: never a leader, so no HELLO waits here.
            RaftPeerId leader = info == null ? null : info.getLeaderId();
            return LeaderHint.format(leader == null || leader.equals(self) ? null : members.clientAddress(leader), "node " + nodeId
                    + " is not a member of the cluster (it was removed, or waits to be added); its members are "
                    + members.current().keySet());
        }
        if (info == null) {
            return LeaderHint.format(null, "node " + nodeId + " is starting");
        }
        if (info.isLeader()) {
            if (info.isLeaderReady() && servingFromIndex == Long.MAX_VALUE) {
                leaderReady(); // in case the notification has not come yet
            }
            if (serving()) {
                return null;
            }
            return LeaderHint.format(members.clientAddress(self), "node " + nodeId
                    + " was just elected leader and is still applying the log; connect again in a moment");
        }
        RaftPeerId leader = info.getLeaderId();
        String address = leader == null || leader.equals(self) ? null : members.clientAddress(leader);
        if (address == null) {
            return LeaderHint.format(null, "node " + nodeId + " is a follower and knows no leader yet (an election is running)");
        }
        long silentMs = leaderSilenceMs(info);
        SilentLeader silent = silentLeader;
        long commitIndex = division.commitIndex();
        if (silentMs >= leaderSilenceMs) {
            silent = new SilentLeader(leader, info.getCurrentTerm(), commitIndex, System.nanoTime());
            silentLeader = silent;
        }
        if (silent != null && silent.leader().equals(leader) && silent.term() == info.getCurrentTerm()
                && commitIndex <= silent.commitIndex()
                && System.nanoTime() - silent.foundAtNanos() < TimeUnit.MILLISECONDS.toNanos(electionTimeoutMaxMs)) {
            // Rule S2: a leader that went silent is most likely dead; naming it would send clients to a closed port.
            return LeaderHint.format(null, "node " + nodeId + " is a follower and has not heard from the leader, node "
                    + ClusterMember.nodeIdOf(leader.toString()) + ", for " + silentMs + " ms or more (an election is due)");
        }
        return LeaderHint.format(address, "node " + nodeId + " is a follower; the leader is node " + ClusterMember.nodeIdOf(leader.toString()));
    }

    /**
     * True while this node leads the shard and serves its clients: what {@link #notLeader} answers null for, read
     * without its side effects (it records a silent leader, which changes the hints HELLO gets), so that a metrics
     * scrape changes nothing.
     */
    boolean serving() {
        DivisionInfo info = division.info();
        return info != null && info.isLeader() && info.isLeaderReady() && info.getLastAppliedIndex() >= servingFromIndex
                && levelFinalized.isDone();
    }

    /**
     * True once this node is out of the shard: its configuration does not name it (a node that joins, before it is added;
     * one removed, until Ratis shuts its shard down), or Ratis shut the shard down after it started (removed).
     */
    boolean notAMember(DivisionInfo info) {
        return info == null ? startedAndOpen.getAsBoolean() : !members.isMember(nodeId);
    }

    /** Milliseconds since this follower last heard from its leader; 0 if it is no follower. */
    private static long leaderSilenceMs(DivisionInfo info) {
        RoleInfoProto role = info.getRoleInfoProto();
        return role.hasFollowerInfo() ? role.getFollowerInfo().getLeaderInfo().getLastRpcElapsedTimeMs() : 0;
    }

    /**
     * Rule S2: true while this node cannot send a client asking at {@code askedAtNanos} to a node that is
     * alive: an election runs, the leader went silent, this node was just elected and is still applying the
     * log, or it is a follower that has not heard from its leader since the client asked (the leader may have
     * died a moment ago: a client that lost it reconnects here within milliseconds, long before this node
     * could tell). Under load the leader's appends arrive every few milliseconds; when idle, its heartbeat
     * every half minimum election timeout.
     */
    boolean awaitingLeader(long askedAtNanos) {
        String reason = notLeader();
        if (reason == null) {
            return false;
        }
        DivisionInfo info = division.info();
        if (notAMember(info)) {
            return false; // not a member: it will name no leader by waiting
        }
        String named = LeaderHint.leaderAddress(reason);
        if (named == null || named.equals(members.clientAddress(self))) {
            return true;
        }
        long askedMsAgo = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - askedAtNanos);
        return info == null || leaderSilenceMs(info) >= askedMsAgo;
    }

    /** The shard's leader changed: this node stops serving until it is a ready leader again. Returns whether it was serving. */
    boolean leaderChanged() {
        boolean wasServing = servingFromIndex != Long.MAX_VALUE;
        servingFromIndex = Long.MAX_VALUE;
        return wasServing;
    }

    /** This node became a ready leader: it serves once it has applied what is committed now (and R12's level entry, if new). */
    synchronized void leaderReady() {
        if (servingFromIndex != Long.MAX_VALUE) {
            return; // told already (notLeader() asks too, in case the notification is late)
        }
        long committed = division.commitIndex();
        if (committed < 0) {
            LOG.warn("Cluster node {} became the leader but could not read its commit index; it serves once told again.", nodeId);
            return;
        }
        servingFromIndex = committed;
        try {
            levelFinalized = finalizeLevel.get();
        } catch (RuntimeException e) {
            LOG.warn("Cluster node {} became the leader but could not finalize the cluster's entry level: {}", nodeId, e.toString());
            return;
        }
        LOG.info("Cluster node {} is the shard's leader; it serves clients once it has applied the log through index {}.",
                nodeId, committed);
    }
}
