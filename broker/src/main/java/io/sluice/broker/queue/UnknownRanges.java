package io.sluice.broker.queue;

import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;

/**
 * The ranges of one ACK or NACK frame that named no message outstanding on the consumer, answered with one ERROR
 * UNKNOWN_MESSAGE_ID for the frame. One ERROR per range let a frame of many bogus ranges (an 8 MiB ACK holds about
 * 500,000) make hundreds of thousands of answers: some 150 bytes out for every 16 in, queued for a client that may not
 * read them. The sentence names the first range and how many there were. On the queue's thread.
 */
final class UnknownRanges {
    private final String frame;
    private final String queue;
    private final IdRange first;
    private long count;

    private UnknownRanges(String frame, String queue, IdRange first) {
        this.frame = frame;
        this.queue = queue;
        this.first = first;
    }

    /**
     * Adds an unknown range of a {@code frame} ("ack" or "nack") to {@code unknown}, made at the first: a frame whose
     * ranges are all outstanding, the usual one, makes none.
     */
    static UnknownRanges add(UnknownRanges unknown, String frame, String queue, IdRange range) {
        UnknownRanges to = unknown != null ? unknown : new UnknownRanges(frame, queue, range);
        to.count++;
        return to;
    }

    /** Sends the one ERROR, if any range was unknown ({@code unknown} not null). */
    static void report(UnknownRanges unknown, ConsumerSession session) {
        if (unknown != null) {
            unknown.send(session);
        }
    }

    private void send(ConsumerSession session) {
        String ranges = count == 1 ? "message ids " + first.from() + ".." + first.to()
                : count + " ranges of message ids, the first " + first.from() + ".." + first.to() + ",";
        session.connection.error(ErrorCode.UNKNOWN_MESSAGE_ID, frame + " of " + ranges + " on consumer " + session.tag
                + " of queue '" + queue + "': " + (count == 1 ? "none is" : "none of them is") + " outstanding on it");
        session.connection.flush();
    }
}
