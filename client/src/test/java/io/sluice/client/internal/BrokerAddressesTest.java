package io.sluice.client.internal;

import io.sluice.protocol.LeaderHint;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BrokerAddressesTest {
    private static final BrokerAddresses.Address A = BrokerAddresses.Address.parse("10.0.0.1:7672");
    private static final BrokerAddresses.Address B = BrokerAddresses.Address.parse("10.0.0.2:7672");
    private static final BrokerAddresses.Address C = BrokerAddresses.Address.parse("10.0.0.3:7672");

    @Test
    void shouldStayOnTheOneBrokerItWasGiven() {
        BrokerAddresses one = new BrokerAddresses(List.of(A));
        one.moveOn(null);
        assertEquals(A, one.current());
    }

    @Test
    void shouldGoRoundTheListUntilANodeNamesTheLeader() {
        BrokerAddresses cluster = new BrokerAddresses(List.of(A, B, C));
        assertEquals(A, cluster.current());
        cluster.moveOn(null);
        assertEquals(B, cluster.current());
        assertFalse(cluster.moveOn(LeaderHint.format(null, "an election is running")));
        assertEquals(C, cluster.current());
        assertTrue(cluster.moveOn(LeaderHint.format("10.0.0.2:7672", "node 3 is a follower")));
        assertEquals(B, cluster.current(), "the leader named");
        cluster.moveOn(null);
        assertEquals(C, cluster.current(), "the named leader went away: back to the list where it was");
        cluster.moveOn(null);
        assertEquals(A, cluster.current());
        assertFalse(cluster.moveOn(LeaderHint.format("10.0.0.2:7672", "node 1 is a follower")), "named before: no news");
        assertEquals(B, cluster.current());
        assertTrue(cluster.moveOn(LeaderHint.format("10.0.0.3:7672", "node 1 is a follower")), "a new leader");
        assertEquals(C, cluster.current());
    }

    @Test
    void shouldReadOnlyTheHintsItsFormatAllows() {
        assertEquals("h:1", LeaderHint.leaderAddress(LeaderHint.format("h:1", "x")));
        assertEquals("[::1]:7672", LeaderHint.leaderAddress("leader=[::1]:7672 node 2 is a follower"));
        assertNull(LeaderHint.leaderAddress(LeaderHint.format(null, "no leader")));
        assertNull(LeaderHint.leaderAddress("the leader is h:1"));
        assertNull(LeaderHint.leaderAddress("leader=h:port x"));
        assertNull(LeaderHint.leaderAddress(null));
        assertThrows(IllegalArgumentException.class, () -> BrokerAddresses.Address.parse("nohost"));
        assertThrows(IllegalArgumentException.class, () -> BrokerAddresses.Address.parse("h:0"));
    }
}
