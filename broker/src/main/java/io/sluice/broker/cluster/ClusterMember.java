package io.sluice.broker.cluster;

import io.sluice.broker.config.BrokerConfig;
import org.apache.ratis.protocol.RaftPeer;

/**
 * One node of the shard's Raft configuration: its id, the host the others reach it on, and its Raft, client and
 * snapshot ports (0: it serves no snapshots). A member travels in the Raft configuration itself, so that every node,
 * a restarted or newly added one included, learns it from the log: the Raft port as the {@link RaftPeer}'s address,
 * the client listener as its client address and the snapshot server as its admin address (fields Ratis carries and
 * persists with each configuration entry, and uses for nothing here: the broker's Raft server binds its own ports).
 *
 * <p>A configuration written before members carried a snapshot port (no admin address) leaves it 0; {@link
 * ClusterMembers} then takes it from {@code cluster.nodes}.
 */
public record ClusterMember(int id, String host, int raftPort, int clientPort, int snapshotPort) {

    public ClusterMember {
        if (id < 1) {
            throw new IllegalArgumentException("a node id is a positive number, got " + id);
        }
        if (host == null || host.isBlank() || host.contains(":") && !host.startsWith("[")) {
            throw new IllegalArgumentException("a node's host is a name or an address (an IPv6 one in brackets), got '" + host + "'");
        }
        checkPort("raftPort", raftPort, false);
        checkPort("clientPort", clientPort, false);
        checkPort("snapshotPort", snapshotPort, true);
    }

    private static void checkPort(String name, int port, boolean zeroAllowed) {
        if (port < (zeroAllowed ? 0 : 1) || port > 65_535) {
            throw new IllegalArgumentException(name + " " + port + " is outside " + (zeroAllowed ? "0" : "1") + "..65535");
        }
    }

    static ClusterMember of(BrokerConfig.Node node) {
        return new ClusterMember(node.id, node.host, node.raftPort, node.clientPort, node.snapshotPort);
    }

    /** Ratis's id of node {@code id}. */
    static String peerId(int id) {
        return "n" + id;
    }

    /** The node id of Ratis's peer id {@code peerId} ("n4": 4), or 0 if it names no node. */
    static int nodeIdOf(String peerId) {
        if (peerId == null || peerId.length() < 2 || peerId.charAt(0) != 'n') {
            return 0;
        }
        try {
            return Integer.parseInt(peerId.substring(1));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /** host:port of this node's client listener, for NOT_LEADER hints. */
    String clientAddress() {
        return host + ":" + clientPort;
    }

    /** host:port of this node's snapshot server, or null if it serves none. */
    String snapshotAddress() {
        return snapshotPort == 0 ? null : host + ":" + snapshotPort;
    }

    /** This member as a peer of the Raft configuration. */
    RaftPeer toPeer() {
        RaftPeer.Builder peer = RaftPeer.newBuilder().setId(peerId(id)).setAddress(host + ":" + raftPort)
                .setClientAddress(clientAddress());
        if (snapshotPort != 0) {
            peer.setAdminAddress(snapshotAddress());
        }
        return peer.build();
    }

    /**
     * The member a peer of the Raft configuration describes, or null if it is none of Sluice's (an id that is not
     * "n" and a number, an address without a port). A peer without a client address takes the Raft host and port 0.
     */
    static ClusterMember fromPeer(RaftPeer peer) {
        int id = nodeIdOf(peer.getId().toString());
        String[] raft = hostPort(peer.getAddress());
        if (id < 1 || raft == null) {
            return null;
        }
        String[] client = hostPort(peer.getClientAddress());
        String[] snapshot = hostPort(peer.getAdminAddress());
        try {
            return new ClusterMember(id, raft[0], Integer.parseInt(raft[1]), client == null ? 0 : Integer.parseInt(client[1]),
                    snapshot == null ? 0 : Integer.parseInt(snapshot[1]));
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /** {host, port} of "host:port" (the port after the last colon), or null if it is not that. */
    private static String[] hostPort(String address) {
        if (address == null) {
            return null;
        }
        int colon = address.lastIndexOf(':');
        if (colon < 1 || colon == address.length() - 1) {
            return null;
        }
        return new String[]{address.substring(0, colon), address.substring(colon + 1)};
    }
}
