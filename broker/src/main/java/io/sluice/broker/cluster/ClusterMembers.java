package io.sluice.broker.cluster;

import io.sluice.broker.config.BrokerConfig;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftConfiguration;
import org.apache.ratis.server.RaftServer;

import java.io.IOException;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The shard's members as this node knows them from the Raft configuration in its log (docs/replication.md, "Adding and
 * removing a node"): who is a member, and where each listens for clients (NOT_LEADER hints) and serves snapshots
 * (rule R4). Ratis keeps the configuration in its log and metadata, so a restarted node and a newly added one learn it
 * from there; {@code cluster.nodes} of this node's configuration only seeds the group of a cluster's first start, and
 * fills in what a configuration written before members carried it lacks (a snapshot port), or an address a node that
 * joins needs before it has received any configuration (the leader's snapshot server, while it catches up).
 *
 * <p>Threads: thread-safe. Each read asks Ratis (whose configuration reads are safe from any thread) and keeps the
 * answer as the last one seen, which a node whose shard has shut down (removed from the cluster) still answers with.
 */
final class ClusterMembers {
    /** What the configuration says at one moment: its members, and while a change runs the members before it. */
    record View(Map<Integer, ClusterMember> current, Map<Integer, ClusterMember> previous) {
        boolean changing() {
            return !previous.isEmpty() && !previous.keySet().equals(current.keySet());
        }
    }

    private final RaftServer server;
    private final RaftGroupId group;
    /** {@code cluster.nodes} of this node's configuration, by id. */
    private final Map<Integer, ClusterMember> configured = new TreeMap<>();
    /**
     * The last configuration read and its view, one object so that both change together: Ratis replaces its configuration
     * whole on a change, so the same object reads the same, and is not read again.
     */
    private record Seen(RaftConfiguration conf, View view) {
    }

    private volatile Seen lastSeen = new Seen(null, new View(Map.of(), Map.of()));

    ClusterMembers(RaftServer server, RaftGroupId group, List<BrokerConfig.Node> configured) {
        this.server = server;
        this.group = group;
        for (BrokerConfig.Node node : configured) {
            this.configured.put(node.id, ClusterMember.of(node));
        }
    }

    /** The configuration now, or the last one seen if the shard is not running (starting, closed, or removed). */
    View view() {
        RaftConfiguration conf;
        try {
            conf = server.getDivision(group).getRaftConf();
        } catch (IOException | RuntimeException e) {
            return lastSeen.view();
        }
        Seen seen = lastSeen;
        if (conf == null || conf == seen.conf()) {
            return seen.view();
        }
        View view = new View(members(conf.getCurrentPeers(), configured), members(conf.getPreviousPeers(), configured));
        lastSeen = new Seen(conf, view); // a thread storing an older one meanwhile only costs a read more
        return view;
    }

    /** The members of the configuration now (the new one while a change runs), by id. */
    Map<Integer, ClusterMember> current() {
        return view().current();
    }

    boolean isMember(int id) {
        return current().containsKey(id);
    }

    /**
     * Member {@code id} as the configuration describes it (the new one, else the one before a change running), else as
     * {@code cluster.nodes} does, or null if neither knows it.
     */
    ClusterMember member(int id) {
        return member(view(), configured, id);
    }

    static ClusterMember member(View view, Map<Integer, ClusterMember> configured, int id) {
        ClusterMember m = view.current().get(id);
        if (m == null) {
            m = view.previous().get(id);
        }
        return m != null ? m : configured.get(id);
    }

    /** host:port of {@code peer}'s client listener, or null if unknown. */
    String clientAddress(RaftPeerId peer) {
        ClusterMember m = peer == null ? null : member(ClusterMember.nodeIdOf(peer.toString()));
        return m == null ? null : m.clientAddress();
    }

    /** host:port of {@code peer}'s snapshot server, or null if it serves none or is unknown. */
    String snapshotAddress(RaftPeerId peer) {
        ClusterMember m = peer == null ? null : member(ClusterMember.nodeIdOf(peer.toString()));
        return m == null ? null : m.snapshotAddress();
    }

    /** The members {@code peers} describe, by id, a snapshot port missing taken from {@code configured}. */
    static Map<Integer, ClusterMember> members(Collection<RaftPeer> peers, Map<Integer, ClusterMember> configured) {
        Map<Integer, ClusterMember> members = new TreeMap<>();
        for (RaftPeer peer : peers) {
            ClusterMember m = ClusterMember.fromPeer(peer);
            if (m == null) {
                continue; // not a peer Sluice put there
            }
            ClusterMember seed = configured.get(m.id());
            if (m.snapshotPort() == 0 && seed != null && seed.snapshotPort() != 0) {
                // A configuration from before members carried their snapshot port: cluster.nodes has it.
                m = new ClusterMember(m.id(), m.host(), m.raftPort(), m.clientPort(), seed.snapshotPort());
            }
            members.put(m.id(), m);
        }
        return java.util.Collections.unmodifiableMap(members);
    }
}
