package io.sluice.broker.queue;

import io.sluice.protocol.ErrorCode;

import java.util.ArrayList;
import java.util.List;

/**
 * The settlements of one consumer frame (an ACK's late acks, a NACK's rejections to the dead-letter queue) that could not
 * be applied because the store failed to read their message, answered with one ERROR STORAGE_FAILED for the frame, as
 * {@link UnknownRanges} answers the ids not outstanding: the client's application learns that what it settled was not
 * taken, and that the message comes again. Before, only the operator log said so, and the application believed its ack
 * taken. The sentence names the frame, the consumer, the queue, the first message, how many there were, the cause and
 * what becomes of them. A cluster node's replicated acks whose message cannot be read are kept in one too, reported
 * by stopping the node instead ({@link Settlements#logAcksApplied}). On the queue's thread.
 */
final class UnreadSettlements {
    private final String settlement;
    private final RuntimeException cause;
    private final List<Long> ids = new ArrayList<>();

    private UnreadSettlements(String settlement, RuntimeException cause) {
        this.settlement = settlement;
        this.cause = cause;
    }

    /**
     * Adds message {@code id}, whose {@code settlement} ("ack", "nack to the dead-letter queue") failed reading it with
     * {@code cause}, to {@code unread}, made at the first: a frame whose messages all read, the usual one, makes none.
     */
    static UnreadSettlements add(UnreadSettlements unread, String settlement, long id, RuntimeException cause) {
        UnreadSettlements to = unread != null ? unread : new UnreadSettlements(settlement, cause);
        to.ids.add(id);
        return to;
    }

    /** The messages, in the order they were added. */
    List<Long> ids() {
        return ids;
    }

    /** The first failure. */
    RuntimeException cause() {
        return cause;
    }

    /** Sends the one ERROR STORAGE_FAILED to {@code session}'s connection; {@code outcome}: what becomes of the messages. */
    void report(ConsumerSession session, String queue, String outcome) {
        String messages = ids.size() == 1 ? "message " + ids.get(0) : ids.size() + " messages, the first " + ids.get(0) + ",";
        String why = cause.getMessage() != null ? cause.getMessage() : cause.getClass().getSimpleName();
        session.connection.error(ErrorCode.STORAGE_FAILED, settlement + " of " + messages + " on consumer " + session.tag
                + " of queue '" + queue + "' was not applied: the queue's storage failed to read "
                + (ids.size() == 1 ? "it" : "them") + " (" + why + "); " + outcome);
        session.connection.flush();
    }
}
