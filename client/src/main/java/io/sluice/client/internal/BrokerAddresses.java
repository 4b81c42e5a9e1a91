package io.sluice.client.internal;

import io.sluice.protocol.LeaderHint;

import java.util.List;

/**
 * Where a connection goes next: the addresses it was given (one broker, or a cluster's bootstrap list) and
 * the leader a NOT_LEADER last named (docs/protocol.md, "Clusters"). The next attempt goes to the named
 * leader if there is one, else to the current bootstrap address; each failure or loss moves on, to the
 * leader the refusal named, or else to the next bootstrap address, round robin. With one address and no
 * cluster every attempt goes to that address, as it always did.
 *
 * <p>Thread-safe (the network thread and a caller of {@code Connection.connect} both use it).
 */
public final class BrokerAddresses {
    /** A broker's client listener. */
    public record Address(String host, int port) {
        public Address {
            if (host == null || host.isBlank()) {
                throw new IllegalArgumentException("broker host is empty");
            }
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException("broker port " + port + " of " + host + " is outside 1..65535");
            }
        }

        /** {@code host:port} (the host may itself hold colons, as an IPv6 literal does: the last one splits). */
        public static Address parse(String hostAndPort) {
            int colon = hostAndPort.lastIndexOf(':');
            if (colon <= 0 || colon == hostAndPort.length() - 1) {
                throw new IllegalArgumentException("broker address '" + hostAndPort + "' is not host:port");
            }
            try {
                return new Address(hostAndPort.substring(0, colon), Integer.parseInt(hostAndPort.substring(colon + 1)));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("broker address '" + hostAndPort + "' has no numeric port", e);
            }
        }

        @Override
        public String toString() {
            return host + ":" + port;
        }
    }

    private final List<Address> bootstrap;
    private int index;
    /** The leader a NOT_LEADER named, tried next; null if none. */
    private Address leader;
    /** The leader the last NOT_LEADER that named one named: a follower names the old leader until it hears of an election. */
    private Address lastNamed;

    public BrokerAddresses(List<Address> bootstrap) {
        if (bootstrap.isEmpty()) {
            throw new IllegalArgumentException("no broker address to connect to");
        }
        this.bootstrap = List.copyOf(bootstrap);
    }

    /** The address of the next attempt. */
    public synchronized Address current() {
        return leader != null ? leader : bootstrap.get(index);
    }

    public int size() {
        return bootstrap.size();
    }

    /**
     * The attempt at {@link #current()} failed, or its connection was lost. {@code notLeaderReason}: the
     * reason of a NOT_LEADER refusal or CLOSE, null for any other end. Returns true if the next attempt goes
     * to a leader that reason named and no NOT_LEADER named last time (a new leader, worth trying at once;
     * the same name again is usually a follower that has not heard of the election yet).
     */
    public synchronized boolean moveOn(String notLeaderReason) {
        String named = notLeaderReason == null ? null : LeaderHint.leaderAddress(notLeaderReason);
        Address next = null;
        if (named != null) {
            try {
                next = Address.parse(named);
            } catch (IllegalArgumentException e) {
                next = null; // a hint this client cannot use: fall back to the list
            }
        }
        if (next == null) {
            if (leader == null) {
                index = (index + 1) % bootstrap.size();
            }
            leader = null;
            return false;
        }
        leader = next;
        boolean news = !next.equals(lastNamed);
        lastNamed = next;
        return news;
    }
}
