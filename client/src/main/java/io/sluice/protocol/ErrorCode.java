package io.sluice.protocol;

/**
 * The wire error codes carried by ERROR, PUBLISH_ERROR and CLOSE frames, and by {@link ProtocolException}.
 *
 * <p>Each entry has a stable numeric code (a {@code uint16} on the wire), a default text used when the
 * sender has nothing more specific to say, and whether retrying the same request later can succeed. Codes
 * are grouped by hundreds: 1xx framing and connection, 2xx security, 3xx queue management, 4xx publishing,
 * 5xx consuming, 6xx transactions, 7xx replication (a cluster of brokers), 9xx broker resources. A code is never renumbered or reused; new codes are appended.
 * Retired: 402 (PUBLISH_TIMEOUT: a publish timeout is the client's own) and 404
 * (PUBLISH_WINDOW_EXCEEDED: a client past its window finds the broker no longer reading), never sent.
 *
 * <p>A code this version does not know (sent by a newer peer) is read as {@link #UNKNOWN}; the raw number
 * stays available on the frame that carried it.
 */
public enum ErrorCode {
    NONE(0, "no error: the connection is closing normally", false),

    MALFORMED_FRAME(100, "the frame does not follow the protocol layout", false),
    FRAME_TOO_LARGE(101, "the frame is longer than the negotiated maxFrameBytes", false),
    UNKNOWN_FRAME_TYPE(102, "the frame type is unknown and not optional", false),
    UNSUPPORTED_VERSION(103, "the peers share no protocol version", false),
    HANDSHAKE_REQUIRED(104, "the first frame on a connection must be HELLO, answered by HELLO_OK", false),
    UNEXPECTED_FRAME(105, "the frame is not valid in this direction or connection state", false),
    HEARTBEAT_TIMEOUT(106, "no frame arrived within two heartbeat intervals", true),

    AUTHENTICATION_FAILED(200, "the user name or password was not accepted", false),
    ACCESS_DENIED(201, "the user may not perform this operation on this queue", false),

    UNKNOWN_QUEUE(300, "no queue has this name", false),
    QUEUE_EXISTS_WITH_DIFFERENT_SETTINGS(301, "the queue exists with settings different from the declared ones", false),
    INVALID_QUEUE_NAME(302, "the queue name is empty, too long or uses characters outside the allowed set", false),
    INVALID_QUEUE_SETTING(303, "a queue setting is unknown, has the wrong type or is out of range", false),
    QUEUE_BEING_DELETED(304, "the queue is being deleted; declare it again once the delete is answered", true),

    MESSAGE_TOO_LARGE(400, "the message is larger than the broker accepts", false),
    QUEUE_BLOCKED(401, "the queue is over its hard quota and refuses publishes until consumers catch up", true),
    STORAGE_FULL(403, "the broker's disk is full", true),
    PRODUCER_FENCED(405, "a newer instance of this named producer registered with the queue; this one may not publish", false),
    SEQUENCE_OUT_OF_WINDOW(406, "the sequence is so far below the producer's highest stored one that the broker cannot tell "
            + "whether it is a duplicate; it was not stored", false),
    INVALID_PRODUCER(407, "the producer name is empty or too long", false),

    UNKNOWN_CONSUMER(500, "no subscription on this connection has this consumer tag", false),
    UNKNOWN_MESSAGE_ID(501, "the message id is not outstanding on this subscription", false),
    CONSUMER_TAG_IN_USE(502, "the consumer tag is already used by a subscription on this connection", false),

    UNKNOWN_TRANSACTION(600, "no open transaction on this connection has this id", false),
    TRANSACTION_TIMED_OUT(601, "the transaction was open longer than its timeout and was rolled back", true),
    TRANSACTION_LIMIT(602, "the transaction is over a broker limit: messages or bytes per transaction, "
            + "or open transactions per connection", false),
    TRANSACTION_ABORTED(603, "the transaction was rolled back by the broker because one of its operations failed; "
            + "the reason says which", false),
    TRANSACTION_ID_IN_USE(604, "a transaction with this id is already open on this connection", false),

    NOT_LEADER(700, "this cluster node is not the leader; connect to the leader the reason names "
            + "(docs/protocol.md, \"Clusters\")", true),
    NOT_REPLICATED(701, "this cluster node does not replicate this operation yet, so it refuses it rather than do it "
            + "on one node only", false),

    RESOURCE_LIMIT(900, "a broker resource limit was reached (connections, subscriptions, memory, open files)", true),
    INTERNAL_ERROR(901, "the broker failed unexpectedly; the operator log has the details", true),
    NOT_CONFIRMED_SHUTDOWN(902, "the broker is shutting down and did not confirm the message; publish it again", true),
    STORAGE_FAILED(903, "the queue's storage failed (a force to disk did not succeed); the message is not confirmed, "
            + "and the queue refuses publishes until the operator restarts the broker", true),

    UNKNOWN(65535, "the peer sent an error code this protocol version does not know", false);

    private static final ErrorCode[] BY_CODE_LOOKUP = values();

    private final int code;
    private final String defaultText;
    private final boolean retriable;

    ErrorCode(int code, String defaultText, boolean retriable) {
        this.code = code;
        this.defaultText = defaultText;
        this.retriable = retriable;
    }

    /** The stable number written on the wire as {@code uint16}. */
    public int code() {
        return code;
    }

    public String defaultText() {
        return defaultText;
    }

    /** Whether sending the same request again, later or on a new connection, can succeed. */
    public boolean retriable() {
        return retriable;
    }

    /** Maps a wire number to its entry, or to {@link #UNKNOWN} when this version does not define it. */
    public static ErrorCode fromCode(int code) {
        for (ErrorCode candidate : BY_CODE_LOOKUP) {
            if (candidate.code == code) {
                return candidate;
            }
        }
        return UNKNOWN;
    }
}
