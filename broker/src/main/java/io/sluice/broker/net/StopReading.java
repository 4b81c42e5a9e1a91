package io.sluice.broker.net;

/**
 * The user event a stopping broker fires into each client connection's pipeline (docs/broker-core.md, on graceful
 * shutdown): the connection stops reading its socket ({@link InboundGate}, rule H3). Publishes it already read are
 * confirmed as usual; the shutdown then waits only for them, not for a client that keeps sending.
 */
public enum StopReading {
    INSTANCE
}
