package io.sluice.broker.queue;

/**
 * One subscription: a consumer tag on a connection, its credit and the messages delivered to it and
 * not yet acknowledged. Touched only on its queue's executor.
 */
final class ConsumerSession {
    /** The most ids {@link #takenBack} remembers. */
    static final long MAX_TAKEN_BACK = 1024;

    final ConsumerLink connection;
    final int tag;
    /**
     * Deliveries the broker may still send before the consumer grants more. Below 0 for a moment after the consumer
     * settled a delivery the ack timeout had already given the unit of back ({@link #settled}), until the CREDIT its
     * client sends for that settlement arrives.
     */
    long credit;
    /** Delivered, unacknowledged. */
    final InFlightDeliveries inFlight = new InFlightDeliveries();
    /** The connection's bound, which this session's credit and deliveries count in. */
    final ConnectionCredit account;
    boolean closed;
    /**
     * Ids the ack timeout took back from this consumer, each giving its credit unit back at once (D5, so that a consumer
     * that lost a message is not stalled by it), that the consumer has not settled since. Its client cannot know the unit
     * came back: once it settles the delivery (a late ACK, a NACK, or an ACK of the copy delivered since) it tops its
     * credit up for it as for any settlement, so the unit is taken again then. Without this each such settlement left
     * the consumer one unit more than it granted: a consumer slow enough to meet its ack timeout was sent more and more
     * beyond its window, and its connection's outstanding credit grew until its CREDITs were refused (found by a
     * review). At most {@value #MAX_TAKEN_BACK} ids: a consumer that never settles them does not top up for them
     * either, so one not remembered costs nothing then.
     */
    private final RangeSet takenBack = new RangeSet();

    ConsumerSession(ConsumerLink connection, int tag, long credit, ConnectionCredit account) {
        this.connection = connection;
        this.tag = tag;
        this.credit = credit;
        this.account = account;
    }

    /** The ack timeout took delivery {@code id} back: its unit goes back to the consumer, and is remembered. */
    void takenBackByTimeout(long id) {
        credit++;
        if (takenBack.span() < MAX_TAKEN_BACK) {
            takenBack.add(id, id);
        }
    }

    /**
     * The consumer settled (ACK, NACK, TX_ACK) ids {@code from..to}, outstanding on it or not: the units the ack timeout
     * gave back for those of them it took back are taken again, as the client's CREDIT for the settlement gives them.
     */
    void settled(long from, long to) {
        if (takenBack.isEmpty()) {
            return;
        }
        long before = takenBack.span();
        takenBack.remove(from, to, null);
        long units = before - takenBack.span();
        credit -= units;
        account.settle(units);
    }
}
