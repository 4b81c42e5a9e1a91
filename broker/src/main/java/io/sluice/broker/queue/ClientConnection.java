package io.sluice.broker.queue;

import io.sluice.protocol.ErrorCode;

/**
 * What every link from a queue to a client connection has ({@link ProducerLink}, {@link ConsumerLink}):
 * the connection's identity, whether it is still open, and the end of a run of writes. Thread-safe:
 * queues call it from their own executors.
 */
public interface ClientConnection {
    /**
     * Ends the writes of one queue task. On the connection's own loop this flushes; from any other
     * thread there is nothing to do, because the drain that takes the writes over ends in one flush.
     */
    void flush();

    /** For log lines: remote address and client name. */
    String describe();

    /**
     * The connection's id (Netty's short channel id): the one key by which the admin API's connections,
     * consumers and producers name a connection, and by which an administrator closes it.
     */
    String id();

    boolean isActive();

    /**
     * Tells the client why and closes the connection: an ERROR (request 0) and a CLOSE, both with {@code code} and
     * {@code sentence}, then the close, once written or after {@code LastFrame.GRACE_MS}. Until it is closed the
     * connection stays active, and frames it sent before may still reach its queues. From any thread. A link with no
     * client of its own (a replica's, a benchmark's) has nothing to close.
     */
    default void closeFor(ErrorCode code, String sentence) {
    }
}
