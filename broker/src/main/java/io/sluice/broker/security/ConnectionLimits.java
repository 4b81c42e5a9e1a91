package io.sluice.broker.security;

import io.sluice.broker.config.BrokerConfig;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The broker-wide connection counts behind {@code limits.max-connections} and
 * {@code limits.max-connections-per-user}, and the counters of every limit refusal (for metrics).
 * Thread-safe: connections on every event loop call in.
 */
public final class ConnectionLimits {
    private final BrokerConfig.Limits limits;
    private final AtomicInteger connections = new AtomicInteger();
    private final ConcurrentHashMap<String, AtomicInteger> perUser = new ConcurrentHashMap<>();
    private final AtomicLong rejectedConnections = new AtomicLong();
    private final AtomicLong rejectedUserConnections = new AtomicLong();
    private final AtomicLong rejectedQueues = new AtomicLong();
    private final AtomicLong rejectedConsumers = new AtomicLong();
    private final AtomicLong rejectedCredit = new AtomicLong();
    private final AtomicLong handshakeTimeouts = new AtomicLong();
    private final AtomicLong oversizedFrames = new AtomicLong();

    public ConnectionLimits(BrokerConfig.Limits limits) {
        this.limits = limits;
    }

    public BrokerConfig.Limits limits() {
        return limits;
    }

    /** Counts a new connection; returns null if within the limit, else the refusal (not counted then). */
    public String openConnection() {
        int n = connections.incrementAndGet();
        if (n > limits.maxConnections) {
            connections.decrementAndGet();
            rejectedConnections.incrementAndGet();
            return "connection count " + n + " would exceed limits.max-connections " + limits.maxConnections;
        }
        return null;
    }

    public void closeConnection() {
        connections.decrementAndGet();
    }

    /** Counts an authenticated connection of {@code user}; returns null if within the limit, else the refusal. */
    public String openUserConnection(String user) {
        AtomicInteger count = perUser.computeIfAbsent(user, u -> new AtomicInteger());
        int n = count.incrementAndGet();
        if (n > limits.maxConnectionsPerUser) {
            count.decrementAndGet();
            rejectedUserConnections.incrementAndGet();
            return "connection count " + n + " of " + (user.isEmpty() ? "anonymous" : "user '" + user + "'")
                    + " would exceed limits.max-connections-per-user " + limits.maxConnectionsPerUser;
        }
        return null;
    }

    public void closeUserConnection(String user) {
        perUser.computeIfPresent(user, (u, count) -> count.decrementAndGet() <= 0 ? null : count);
    }

    public int openConnections() {
        return connections.get();
    }

    public long rejectedConnections() {
        return rejectedConnections.get();
    }

    public long rejectedUserConnections() {
        return rejectedUserConnections.get();
    }

    public long rejectedQueueDeclares() {
        return rejectedQueues.get();
    }

    public long rejectedSubscriptions() {
        return rejectedConsumers.get();
    }

    public long rejectedCredit() {
        return rejectedCredit.get();
    }

    public long handshakeTimeouts() {
        return handshakeTimeouts.get();
    }

    public long oversizedFrames() {
        return oversizedFrames.get();
    }

    public void countRejectedQueue() {
        rejectedQueues.incrementAndGet();
    }

    public void countRejectedConsumer() {
        rejectedConsumers.incrementAndGet();
    }

    public void countRejectedCredit() {
        rejectedCredit.incrementAndGet();
    }

    public void countHandshakeTimeout() {
        handshakeTimeouts.incrementAndGet();
    }

    public void countOversizedFrame() {
        oversizedFrames.incrementAndGet();
    }
}
