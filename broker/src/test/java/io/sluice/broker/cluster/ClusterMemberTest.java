package io.sluice.broker.cluster;

import org.apache.ratis.protocol.RaftPeer;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A member carried in the Raft configuration (docs/replication.md, "Adding and removing a node"): what goes into a
 * {@link RaftPeer} comes back whole, a peer from before snapshot ports were carried reads with none, and the checks of
 * an addition or a removal refuse each mistake with its code.
 */
class ClusterMemberTest {
    private static final ClusterMember ONE = new ClusterMember(1, "10.0.0.1", 7001, 7002, 7003);
    private static final ClusterMember TWO = new ClusterMember(2, "10.0.0.2", 7001, 7002, 7003);
    private static final ClusterMember THREE = new ClusterMember(3, "10.0.0.3", 7001, 7002, 7003);

    @Test
    void aMemberGoesThroughARaftPeerWhole() {
        RaftPeer peer = ONE.toPeer();
        assertEquals("n1", peer.getId().toString());
        assertEquals("10.0.0.1:7001", peer.getAddress());
        assertEquals("10.0.0.1:7002", peer.getClientAddress());
        assertEquals("10.0.0.1:7003", peer.getAdminAddress());
        assertEquals(ONE, ClusterMember.fromPeer(peer));
        assertEquals(ONE, ClusterMember.fromPeer(RaftPeer.newBuilder().setId("n1").setAddress("10.0.0.1:7001")
                .setClientAddress("10.0.0.1:7002").setAdminAddress("10.0.0.1:7003").build()), "as another node reads it from the log");
        ClusterMember v6 = new ClusterMember(7, "[::1]", 1, 2, 0);
        assertEquals(v6, ClusterMember.fromPeer(v6.toPeer()));
    }

    @Test
    void aPeerFromBeforeSnapshotPortsWereCarriedHasNoneAndOthersAreNoMembers() {
        assertEquals(new ClusterMember(2, "h", 1, 2, 0), ClusterMember.fromPeer(RaftPeer.newBuilder().setId("n2").setAddress("h:1")
                .setClientAddress("h:2").build()));
        assertNull(ClusterMember.fromPeer(RaftPeer.newBuilder().setId("other").setAddress("h:1").setClientAddress("h:2").build()));
        assertNull(ClusterMember.fromPeer(RaftPeer.newBuilder().setId("n2").setAddress("h").setClientAddress("h:2").build()));
        assertNull(ClusterMember.fromPeer(RaftPeer.newBuilder().setId("n2").setAddress("h:1").build()), "no client address");
        assertEquals(12, ClusterMember.nodeIdOf("n12"));
        assertEquals(0, ClusterMember.nodeIdOf("nx"));
    }

    @Test
    void aMemberWithoutAUsableIdHostOrPortIsRefusedNamingIt() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new ClusterMember(0, "h", 1, 2, 3)).getMessage().contains("0"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new ClusterMember(1, " ", 1, 2, 3)).getMessage().contains("host"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new ClusterMember(1, "h", 70000, 2, 3)).getMessage()
                .contains("raftPort 70000"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new ClusterMember(1, "h", 1, 0, 3)).getMessage()
                .contains("clientPort 0"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new ClusterMember(1, "h", 1, 2, -1)).getMessage()
                .contains("snapshotPort -1"));
    }

    @Test
    void anAdditionIsRefusedForAKnownIdAnAddressInUseOrAMissingSnapshotPort() {
        List<ClusterMember> three = List.of(ONE, TWO, THREE);
        MembershipChanges.checkAdd(three, new ClusterMember(4, "10.0.0.4", 7001, 7002, 7003), true);
        MembershipChanges.checkAdd(three, new ClusterMember(4, "10.0.0.1", 8001, 8002, 8003), true); // same host, other ports
        assertRefused("duplicate_node", "node 2", () -> MembershipChanges.checkAdd(three, new ClusterMember(2, "10.0.0.9", 1, 2, 3), true));
        assertRefused("duplicate_address", "10.0.0.1:7002",
                () -> MembershipChanges.checkAdd(three, new ClusterMember(4, "10.0.0.1", 8001, 7002, 8003), true));
        assertRefused("duplicate_address", "names twice",
                () -> MembershipChanges.checkAdd(three, new ClusterMember(4, "10.0.0.4", 8001, 8001, 8003), true));
        assertRefused("snapshot_port_required", "snapshotPort",
                () -> MembershipChanges.checkAdd(three, new ClusterMember(4, "10.0.0.4", 1, 2, 0), true));
        MembershipChanges.checkAdd(three, new ClusterMember(4, "10.0.0.4", 1, 2, 0), false);
    }

    @Test
    void aRemovalIsRefusedForAnUnknownNodeTheLeaderOrTheLastMember() {
        List<ClusterMember> three = List.of(ONE, TWO, THREE);
        MembershipChanges.checkRemove(three, 2, 1);
        assertRefused("unknown_node", "[1, 2, 3]", () -> MembershipChanges.checkRemove(three, 9, 1));
        assertRefused("is_leader", "transfer-leader", () -> MembershipChanges.checkRemove(three, 1, 1));
        assertRefused("last_node", "last", () -> MembershipChanges.checkRemove(List.of(TWO), 2, 1));
    }

    @Test
    void theMembersComeFromThePeersAndTheConfiguredListOnlyFillsInWhatTheyLack() {
        ClusterMember oldPeerOfTwo = new ClusterMember(2, "10.0.0.2", 7001, 7002, 0); // written before snapshot ports were carried
        Map<Integer, ClusterMember> configured = Map.of(1, new ClusterMember(1, "old-host", 1, 2, 3), 2, TWO);
        Map<Integer, ClusterMember> members = ClusterMembers.members(List.of(ONE.toPeer(), oldPeerOfTwo.toPeer(),
                RaftPeer.newBuilder().setId("listener-x").setAddress("h:1").build()), configured);
        assertEquals(List.of(1, 2), List.copyOf(members.keySet()), "ordered by id; a peer Sluice did not put there is left out");
        assertEquals(ONE, members.get(1), "the log's addresses win over cluster.nodes");
        assertEquals(TWO, members.get(2), "the snapshot port a peer lacks comes from cluster.nodes");

        ClusterMembers.View removing = new ClusterMembers.View(Map.of(1, ONE), Map.of(1, ONE, 3, THREE));
        assertTrue(removing.changing());
        assertEquals(THREE, ClusterMembers.member(removing, configured, 3), "a member of the configuration being left");
        assertEquals(TWO, ClusterMembers.member(removing, configured, 2), "a node the configuration does not name: cluster.nodes");
        assertNull(ClusterMembers.member(removing, configured, 9));
        assertFalse(new ClusterMembers.View(Map.of(1, ONE), Map.of()).changing());
    }

    private static void assertRefused(String code, String named, Runnable check) {
        MembershipChanges.Refused refused = assertThrows(MembershipChanges.Refused.class, check::run);
        assertEquals(code, refused.code(), refused.getMessage());
        assertTrue(refused.getMessage().contains(named), refused.getMessage());
    }
}
