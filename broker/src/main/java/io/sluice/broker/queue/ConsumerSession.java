package io.sluice.broker.queue;

/**
 * One subscription: a consumer tag on a connection, its credit and the messages delivered to it and
 * not yet acknowledged. Touched only on its queue's executor.
 */
final class ConsumerSession {
    final ConsumerLink connection;
    final int tag;
    /** Deliveries the broker may still send before the consumer grants more. */
    long credit;
    /** Delivered, unacknowledged. */
    final InFlightDeliveries inFlight = new InFlightDeliveries();
    /** The connection's bound, which this session's credit and deliveries count in. */
    final ConnectionCredit account;
    boolean closed;

    ConsumerSession(ConsumerLink connection, int tag, long credit, ConnectionCredit account) {
        this.connection = connection;
        this.tag = tag;
        this.credit = credit;
        this.account = account;
    }

    /** This consumer's figures for a {@link QueueSnapshot}. */
    QueueSnapshot.ConsumerFigures figures() {
        return new QueueSnapshot.ConsumerFigures(connection.id(), tag, credit, inFlight.size(), connection.isWritable());
    }
}
